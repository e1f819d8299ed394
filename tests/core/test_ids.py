"""UUIDv7 ids: unique, version 7, and time-ordered even within one millisecond."""

from __future__ import annotations

import os
import uuid

from agent_reminders import UUID7Factory, new_id


def test_ids_are_uuid7_and_sorted() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert {uuid.UUID(i).version for i in ids} == {7}
    assert {uuid.UUID(i).variant for i in ids} == {uuid.RFC_4122}


def test_counter_overflow_advances_the_timestamp() -> None:
    frozen = 1_800_000_000_000 * 1_000_000  # a fixed clock: every id in the same millisecond
    make = UUID7Factory(clock=lambda: frozen)
    ids = [make() for _ in range(5000)]  # more than the 12-bit counter holds
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    stamps = {uuid.UUID(i).int >> 80 for i in ids}
    assert min(stamps) == 1_800_000_000_000
    assert max(stamps) > 1_800_000_000_000


def test_ids_are_in_the_canonical_text_form() -> None:
    # written without uuid.UUID: the text must be exactly what str(UUID) gives
    make = UUID7Factory()
    for _ in range(500):
        text = make()
        assert str(uuid.UUID(text)) == text
        assert len(text) == 36


def test_a_forked_child_never_repeats_the_parents_random_bits() -> None:
    # the factory reads random bytes ahead; a child must not reuse the block it inherited
    make = UUID7Factory(clock=lambda: 1_800_000_000_000 * 1_000_000)
    make()  # the block is read
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next ids and leave at once
        os.close(read)
        os.write(write, "\n".join(make() for _ in range(5)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split("\n")
    os.waitpid(pid, 0)
    parent = [make() for _ in range(5)]
    # same clock, same counter positions: only the random bits can tell them apart
    assert [i[:19] for i in child] == [i[:19] for i in parent]
    assert not {i[19:] for i in child} & {i[19:] for i in parent}
