"""Random params to the reminder methods: always a reply, never an internal error."""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import Session
from agent_reminders.bridge import Bridge, Connection, Dispatcher
from agent_reminders.storage import MemoryStore

KEYS = [
    "sessionId", "mode", "reminder", "id", "body", "tags", "dedupe_key", "ttl_turns",
    "preserve_on_compact", "propagate", "role_hint", "authority", "fired_at_turn", "source",
    "_meta", "content", "reminderId", "colour",
]  # fmt: skip
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.text(max_size=6)
    | st.sampled_from(["finish_step", "steer", "contract", "advisory", "all", "bridge", "s1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=8,
)
params = st.dictionaries(st.sampled_from(KEYS), values, max_size=6) | values
methods = st.sampled_from(
    [
        "session/remind",
        "_session/inject",
        "session/pending_injections",
        "_session/revoke_reminder",
        "session/prompt",
        "session/load",
        "initialize",
    ]
)


async def _notify(method: str, params: dict[str, Any]) -> None:
    return None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(methods, params), min_size=1, max_size=4))
def test_reminder_methods_never_fail_internally(calls: list[tuple[str, Any]]) -> None:
    async def main() -> None:
        bridge = Bridge(MemoryStore(), worker_id="w")
        await bridge.store.create_session(Session("s1").state())
        d = Dispatcher(bridge.methods)
        conn = Connection(notify=_notify)
        for i, (method, p) in enumerate(calls):
            frame = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": p})
            reply = json.loads(await d.handle_frame(frame, conn) or "null")
            assert reply["id"] == i
            # no model is configured, so a valid prompt is this server's own -32603
            if "error" in reply and reply["error"]["code"] == -32603:
                assert method == "session/prompt"
                assert "no model" in reply["error"]["message"]

    anyio.run(main)
