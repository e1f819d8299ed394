"""The queue's case table (``agent_reminders.testing.queue_contract``) on the in-memory
``InjectionQueue``; ``StoreContract`` runs the same table on every store backend
(tests/storage/test_contract.py), so all of them give the same outcome for each case."""

from __future__ import annotations

from agent_reminders.testing.queue_contract import CASES, InMemoryQueueContract


class TestInjectionQueue(InMemoryQueueContract):
    """Every case of the table, on ``InjectionQueue``."""


def test_the_table_covers_every_rule() -> None:
    names = {c.name for c in CASES}
    for rule in ("push-duplicate-of-", "push-beyond-max-pending", "revoke-", "drain-"):
        assert any(n.startswith(rule) for n in names)
    kinds = {c.expected[0] for c in CASES}
    assert {
        "ok",
        "ReminderError",
        "QueueFullError",
        "AlreadyDeliveredError",
        "UnknownReminderIdError",
        "MissingReminderIdError",
    } <= kinds
