"""``agent-reminders remind``, ``pending`` and ``revoke`` (docs/bridge.md, "Pushing reminders
from the command line"), straight into a
SQLite store and through a running ``serve --ws``: in this process through the CLI app (so
coverage sees them), and as real subprocesses beside a running ``serve``."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

import agent_reminders
from agent_reminders import EventRecord, Session
from agent_reminders.bridge import BridgeClient
from agent_reminders.cli import app
from agent_reminders.storage import SQLiteStore

SRC = str(Path(agent_reminders.__file__).resolve().parents[1])
MAIN = "from agent_reminders.cli import main; main()"
DEFAULT_DB = Path(".agent-reminders") / "state.db"
ADMIN = "admin-token-0123456789"
ADVISORY = "advisory-token-0123456789"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENT_REMINDERS_TOKEN"}
    env["PYTHONPATH"] = SRC + os.pathsep + os.environ.get("PYTHONPATH", "")
    return {**env, **extra}


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def line(self) -> str:
        """The one error line (and it must be the only one)."""
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        assert "Traceback" not in self.err
        return lines[0]


def cli(*args: str, cwd: Path, **env: str) -> Run:
    """The command in this process (so coverage sees it), in ``cwd``, with ``env`` added and
    no token from the outer environment."""
    extra: dict[str, str | None] = {"AGENT_REMINDERS_TOKEN": None, **env}
    with contextlib.chdir(cwd):
        done = CliRunner().invoke(app, list(args), env=extra)
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return Run(done.exit_code, done.stdout, done.stderr)


def cli_process(*args: str, cwd: Path, **env: str) -> Run:
    """The command as a real subprocess (for callers already inside an event loop)."""
    done = subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def make_store(path: Path, *session_ids: str) -> None:
    """A store holding ``session_ids``; the last one is the most recently active."""

    async def main() -> None:
        async with SQLiteStore(path) as store:
            for sid in session_ids:
                await store.create_session(Session(sid).state())

    anyio.run(main)


def snapshot(path: Path) -> dict[str, Any]:
    """What a refused command must leave as it was: sessions, activity order, queues."""

    async def main() -> dict[str, Any]:
        async with SQLiteStore(path, create=False) as store:
            sessions = await store.list_sessions()
            return {
                "sessions": [(s.session_id, s.updated_at) for s in sessions],
                "pending": {s.session_id: await store.pending(s.session_id) for s in sessions},
            }

    return anyio.run(main)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder whose default store holds sessions ``older`` and ``newer`` (the latest)."""
    make_store(tmp_path / DEFAULT_DB, "older", "newer")
    return tmp_path


def test_remind_pending_revoke_through_the_default_store(project: Path) -> None:
    made = cli(
        "remind", "Deploy freeze until Friday", "--tag", "ops", "--ttl-turns", "2", cwd=project
    )
    assert made.code == 0, made.err
    rid = made.out.strip()
    assert uuid.UUID(rid).version == 7  # the one id format of every reminder
    # latest = the most recently active session: "newer"
    listed = cli("pending", "--json", cwd=project)
    assert listed.code == 0, listed.err
    rows = json.loads(listed.out)
    assert rows["pendingCount"] == 1
    (row,) = rows["injections"]
    assert (row["reminderId"], row["body"], row["tags"], row["ttlTurns"]) == (
        rid,
        "Deploy freeze until Friday",
        ["ops"],
        2,
    )
    assert row["authority"] == "contract"  # a local caller has the store file: contract
    assert row["mode"] == "finish_step"
    assert snapshot(project / DEFAULT_DB)["pending"]["older"] == []
    # piped, the plain listing is one tab-separated line per item
    plain = cli("pending", "--session", "newer", cwd=project)
    assert plain.out.splitlines() == [
        f"{rid}\treminder\tfinish_step\tDeploy freeze until Friday\tops"
    ]
    assert json.loads(cli("revoke", rid, "--json", cwd=project).out) == {
        "reminderId": rid,
        "status": "revoked",
    }
    assert cli("revoke", rid, cwd=project).out.strip() == "already_revoked"
    empty = cli("pending", cwd=project)
    assert (empty.code, empty.out, empty.err.strip()) == (0, "", "nothing pending")


def test_remind_json_mode_and_every_option(project: Path) -> None:
    made = cli(
        "remind",
        "Prefer small commits",
        "--session",
        "older",
        "--dedupe-key",
        "style",
        "--tag",
        "a",
        "--tag",
        "b",
        "--authority",
        "corrective",
        "--preserve-on-compact",
        "--propagate",
        "all",
        "--mode",
        "interrupt",
        "--json",
        cwd=project,
    )
    assert made.code == 0, made.err
    (rid,) = json.loads(made.out).values()
    assert json.loads(made.out) == {"reminderId": rid}
    (row,) = snapshot(project / DEFAULT_DB)["pending"]["older"]
    assert row["reminderId"] == rid
    assert row["dedupeKey"] == "style"
    assert row["tags"] == ["a", "b"]
    assert row["authority"] == "corrective"
    assert row["preserveOnCompact"] is True
    assert row["propagate"] == "all"
    assert row["mode"] == "interrupt_immediate"  # an alias is shown resolved


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["remind", ""], "RMD-002", "body"),
        (["remind", "   "], "RMD-002", "body"),
        (["remind", "x" * 20000], "RMD-002", "the limit is 16384"),
        (["remind", "x", "--ttl-turns", "0"], "RMD-002", "ttl_turns"),
        (["remind", "x", "--ttl-turns", "-3"], "RMD-002", "ttl_turns"),
        (["remind", "x", "--ttl-turns", "soon"], "RMD-002", "ttl_turns"),
        (["remind", "x", "--tag", " "], "RMD-002", "tags[0]"),
        (["remind", "x", "--mode", "later"], "RMD-002", "mode"),
        (["remind", "x", "--authority", "root"], "RMD-002", "authority"),
        (["remind", "x", "--propagate", "up"], "RMD-005", "propagate"),
        (["revoke", "nope"], "RMD-102", "no reminder 'nope'"),
        (["revoke", " "], "RMD-102", "missing or blank"),
    ],
)
def test_refusals_are_one_line_with_the_bridge_rmd_code(
    project: Path, args: list[str], code: str, says: str
) -> None:
    before = snapshot(project / DEFAULT_DB)
    run = cli(*args, cwd=project)
    assert run.code == 1
    assert run.out == ""
    assert run.line.startswith(f"error: {code}: ")
    assert says in run.line
    assert snapshot(project / DEFAULT_DB) == before


def test_a_delivered_reminder_cannot_be_revoked(project: Path) -> None:
    rid = cli("remind", "seen already", cwd=project).out.strip()

    async def drain() -> None:
        async with SQLiteStore(project / DEFAULT_DB) as store:
            await store.drain("newer", ["finish_step"])

    anyio.run(drain)
    run = cli("revoke", rid, cwd=project)
    assert run.code == 1
    assert run.line == f"error: RMD-102: reminder {rid!r} was already delivered"


def test_unknown_session_latest_and_missing_store(project: Path, tmp_path: Path) -> None:
    before = snapshot(project / DEFAULT_DB)
    for args in (["remind", "x", "--session", "ghost"], ["pending", "-s", "ghost"]):
        run = cli(*args, cwd=project)
        assert run.code == 1
        assert run.line == (
            "error: no session 'ghost' in store sqlite:./.agent-reminders/state.db "
            "(-32004 Session not found)"
        )
    assert snapshot(project / DEFAULT_DB) == before

    # latest follows activity: a write to "older" makes it the latest
    async def touch() -> None:
        async with SQLiteStore(project / DEFAULT_DB) as store:
            await store.append_events(
                "older", [EventRecord(seq=0, topic="t", kind="t.x", payload={})]
            )

    anyio.run(touch)
    rid = cli("remind", "for the latest", cwd=project).out.strip()
    assert [r["id"] for r in snapshot(project / DEFAULT_DB)["pending"]["older"]] == [rid]

    empty = tmp_path / "empty.db"
    make_store(empty)
    run = cli("remind", "x", "--store", f"sqlite:{empty}", cwd=project)
    assert run.code == 1
    assert run.line.startswith(f"error: no session in store sqlite:{empty} yet")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = cli("pending", cwd=elsewhere)
    assert run.code == 1
    assert run.line == (
        "error: RMD-109: no session store at ./.agent-reminders/state.db: its folder "
        ".agent-reminders does not exist (nothing was created); create it with: "
        "agent-reminders sessions new"
    )
    assert list(elsewhere.iterdir()) == []


def test_usage_errors_exit_2(project: Path) -> None:
    both = cli("pending", "--url", "ws://127.0.0.1:1/", "--store", "x.db", cwd=project)
    assert both.code == 2
    assert "not both" in both.line
    missing = cli("remind", cwd=project)
    assert missing.code == 2
    assert "Missing argument 'body'" in missing.line


# -- the whole way: a CLI remind on the store reaches the model of a serve prompt -----------


@pytest.mark.anyio
async def test_a_store_remind_is_seen_by_serve_and_reaches_the_model(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"content": "Noted."}) + "\n")
    log = tmp_path / "requests.jsonl"
    argv = [sys.executable, "-c", MAIN, "serve", "--model", f"scripted:{script}"]
    argv += ["--request-log", str(log)]  # the default store of the folder
    async with BridgeClient.connect_stdio(argv, env=_env(), cwd=tmp_path) as client:
        sid = await client.new_session()
    done = await anyio.run_process(
        [sys.executable, "-c", MAIN, "remind", "The API is frozen", "--tag", "api"],
        cwd=tmp_path,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rid = done.stdout.decode().strip()
    async with BridgeClient.connect_stdio(argv, env=_env(), cwd=tmp_path) as client:
        (row,) = await client.pending(sid)
        assert (row["reminderId"], row["body"], row["source"]) == (
            rid,
            "The API is frozen",
            "bridge",
        )
        assert await client.prompt(sid, "go on") == "end_turn"
        emitted = [
            n for n in client.take_notifications() if n.method == "_session/reminder_emitted"
        ]
        assert [n.params["reminder"]["reminderId"] for n in emitted] == [rid]
        assert await client.pending(sid) == []
    (request,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert request["session_id"] == sid
    assert "The API is frozen" in json.dumps(request["messages"])
    run = cli_process("revoke", rid, cwd=tmp_path)
    assert run.line == f"error: RMD-102: reminder {rid!r} was already delivered"


# -- through a running bridge: serve --ws ---------------------------------------------------


@dataclass
class WsServer:
    url: str
    session: str
    other: str


@pytest.fixture
def ws_server(tmp_path: Path) -> Iterator[WsServer]:
    make_store(tmp_path / "state.db", "other", "mine")
    config = tmp_path / "bridge.toml"
    config.write_text(
        f'[[tokens]]\ntoken = "{ADMIN}"\nadmin = true\n\n[[tokens]]\ntoken = "{ADVISORY}"\n'
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            MAIN,
            "serve",
            "--ws",
            "127.0.0.1:0",
            "--config",
            str(config),
            "--store",
            f"sqlite:{tmp_path / 'state.db'}",
        ],
        cwd=tmp_path,
        env=_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "listening on ws://127.0.0.1:PORT/"
        assert line.startswith("listening on "), line
        yield WsServer(line.split()[-1], "mine", "other")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        assert proc.stderr is not None
        proc.stderr.close()


def test_through_a_running_bridge(ws_server: WsServer, tmp_path: Path) -> None:
    url, sid = ws_server.url, ws_server.session
    made = cli(
        "remind",
        "Ship it",
        "--url",
        url,
        "-s",
        sid,
        "--tag",
        "rel",
        cwd=tmp_path,
        AGENT_REMINDERS_TOKEN=ADVISORY,
    )
    assert made.code == 0, made.err
    rid = made.out.strip()
    listed = cli(
        "pending", "--url", url, "-s", sid, "--json", cwd=tmp_path, AGENT_REMINDERS_TOKEN=ADVISORY
    )
    (row,) = json.loads(listed.out)["injections"]
    assert (row["reminderId"], row["authority"]) == (rid, "advisory")  # the token's grant
    # the bridge's store is the file: a store-mode listing sees the same row
    assert snapshot(tmp_path / "state.db")["pending"][sid] == [row]

    refused = cli(
        "remind",
        "x",
        "--url",
        url,
        "-s",
        sid,
        "--authority",
        "contract",
        cwd=tmp_path,
        AGENT_REMINDERS_TOKEN=ADVISORY,
    )
    assert refused.code == 1
    assert (
        refused.line
        == "error: RMD-009: authority 'contract' is above this source's grant 'advisory'"
    )
    strong = cli(
        "remind",
        "x",
        "--url",
        url,
        "-s",
        sid,
        "--authority",
        "contract",
        cwd=tmp_path,
        AGENT_REMINDERS_TOKEN=ADMIN,
    )
    assert strong.code == 0, strong.err

    revoked = cli(
        "revoke", rid, "--url", url, "-s", sid, "--json", cwd=tmp_path, AGENT_REMINDERS_TOKEN=ADMIN
    )
    assert json.loads(revoked.out) == {"reminderId": rid, "status": "revoked"}

    ghost = cli("pending", "--url", url, "-s", "ghost", cwd=tmp_path, AGENT_REMINDERS_TOKEN=ADMIN)
    assert ghost.code == 1
    assert (
        ghost.line == f"error: no session 'ghost' on the bridge at {url} (-32004 Session not found)"
    )

    # the bridge has no "latest" method: --session latest means its only session
    latest = cli("pending", "--url", url, cwd=tmp_path, AGENT_REMINDERS_TOKEN=ADMIN)
    assert latest.code == 1
    assert latest.line.startswith(
        "error: --session latest through --url needs the bridge to hold exactly one session"
    )
    assert latest.line.endswith("give --session ID")

    untokened = cli("pending", "--url", url, "-s", sid, cwd=tmp_path)
    assert untokened.code == 1
    assert "HTTP 401" in untokened.line
    assert "AGENT_REMINDERS_TOKEN" in untokened.line

    for args in (["remind", ""], ["remind", "x", "--ttl-turns", "0"], ["revoke", "nope"]):
        run = cli(*args, "--url", url, "-s", sid, cwd=tmp_path, AGENT_REMINDERS_TOKEN=ADMIN)
        assert run.code == 1
        assert run.line.startswith(("error: RMD-002: ", "error: RMD-102: "))

    gone = cli(
        "pending",
        "--url",
        "ws://127.0.0.1:9/",
        "-s",
        sid,
        cwd=tmp_path,
        AGENT_REMINDERS_TOKEN=ADMIN,
    )
    assert gone.code == 1
    assert gone.line.startswith("error: RMD-110: cannot connect to the bridge at ws://127.0.0.1:9/")
