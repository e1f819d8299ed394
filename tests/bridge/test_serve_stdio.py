"""``agent-reminders serve`` as a subprocess over stdio (docs/protocol.md, "Transports" and
"Methods"; the store in docs/storage.md)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import agent_reminders

SRC = str(Path(agent_reminders.__file__).resolve().parents[1])
MAIN = "from agent_reminders.cli import main; main()"


class Server:
    """A running ``serve`` process and a line-by-line client for it."""

    def __init__(self, *args: str, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", MAIN, "serve", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.next_id = 0
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def reply_to(self, request_id: Any) -> dict[str, Any]:
        """Read until the reply to ``request_id``; notifications on the way are kept."""
        while True:
            message = json.loads(self.lines.get(timeout=20))
            if "method" in message:
                self.notifications.append(message)
            elif message.get("id") == request_id:
                return message  # type: ignore[no-any-return]
            else:
                raise AssertionError(f"unexpected reply {message}")

    def call(self, method: str, params: Any) -> Any:
        self.next_id += 1
        self.send(
            json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        )
        reply = self.reply_to(self.next_id)
        assert "result" in reply, reply
        return reply["result"]

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=20)
        self.pump.join(timeout=20)
        assert self.proc.stderr is not None
        assert self.proc.stdout is not None
        self.stderr = self.proc.stderr.read().decode()
        self.proc.stderr.close()
        self.proc.stdout.close()
        return code


SCRIPT = [
    {"content": "", "tool_calls": [{"id": "c1", "name": "grep", "arguments": {"q": "x"}}]},
    {"content": "Checked."},
]


def test_serve_over_stdio_then_load_after_a_restart(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(s) for s in SCRIPT) + "\n")
    log = tmp_path / "requests.jsonl"
    args = (
        "--store",
        "sqlite:state.db",
        "--model",
        f"scripted:{script}",
        "--request-log",
        str(log),
    )
    server = Server(*args, cwd=tmp_path)
    try:
        init = server.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["agentCapabilities"]["loadSession"] is True
        sid = server.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})["sessionId"]
        server.send("{oops")
        assert server.reply_to(None)["error"]["code"] == -32700
        rid = server.call("session/remind", {"sessionId": sid, "body": "CI is red on main"})
        result = server.call(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        )
        assert result == {"stopReason": "end_turn"}
        kinds = [
            n["params"]["update"]["sessionUpdate"]
            if n["method"] == "session/update"
            else n["method"]
            for n in server.notifications
        ]
        assert kinds == [
            "_session/reminder_emitted",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ]
        assert server.notifications[0]["params"]["reminder"]["reminderId"] == rid["reminderId"]
    finally:
        assert server.close() == 0
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    # the script's answers carry no usage: a line has it only when the answer had one
    assert list(requests[0]) == ["session_id", "turn", "timestamp", "model", "system", "messages"]
    assert requests[0]["session_id"] == sid
    assert requests[0]["model"] == "scripted"
    assert requests[0]["timestamp"].endswith("Z")
    assert "CI is red on main" in json.dumps(requests[0]["messages"])

    again = Server(*args, cwd=tmp_path)
    try:
        # a stored session is found without session/load, and sessionId may be left out
        assert again.call("session/pending_injections", {}) == {
            "pendingCount": 0,
            "injections": [],
        }
        assert (
            again.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
            is None
        )
        kinds = [n["params"]["update"]["sessionUpdate"] for n in again.notifications]
        assert kinds[0] == "user_message_chunk"
        assert "agent_message_chunk" in kinds
    finally:
        assert again.close() == 0


def test_a_store_that_cannot_be_opened_ends_serve_at_once(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.db"
    foreign.write_bytes(b"not a database at all\n" * 10)
    before = foreign.read_bytes()
    server = Server("--store", f"sqlite:{foreign}", cwd=tmp_path)
    code = server.close()
    assert code != 0
    lines = server.stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(foreign) in lines[0]
    assert "Traceback" not in server.stderr
    assert foreign.read_bytes() == before


def test_ws_without_tokens_is_refused_at_once(tmp_path: Path) -> None:
    server = Server("--store", "memory:", "--ws", "127.0.0.1:0", cwd=tmp_path)
    assert server.close() != 0
    assert server.stderr.strip().splitlines() == [
        "error: RMD-104: --ws needs at least one [[tokens]] entry in the --config file"
    ]
