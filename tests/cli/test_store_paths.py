"""Where the commands look for their store: a folder that does not exist is refused by name
(a typo must not start an empty store nobody pushes to), the default store still starts in a
fresh folder, and a store on a read-only volume can be read.

Every command runs as a real subprocess of this checkout (``serve``, ``remind``, ``pending``,
``revoke``, ``hook claude-code``). The read-only volume is a real read-only bind mount, which
needs root (skipped otherwise): root writes any file whatever its permission bits, so a
``chmod`` would prove nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import anyio
import pytest
from cli_process import run

from agent_reminders import Session
from agent_reminders.storage import SQLiteStore
from agent_reminders.testing.store_contract import queue_items


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# -- a folder that does not exist ---------------------------------------------------------


@pytest.mark.parametrize("form", ["sqlite:{}", "{}"])
def test_serve_refuses_a_store_whose_folder_does_not_exist(tmp_path: Path, form: str) -> None:
    typo = tmp_path / "stat"
    done = run("serve", "--store", form.format(typo / "state.db"), cwd=tmp_path)
    assert done.code != 0
    assert f"folder {typo} does not exist" in done.line
    assert tree(tmp_path) == []  # nothing was created


def test_serve_still_starts_the_default_store_in_a_fresh_folder(tmp_path: Path) -> None:
    done = run("serve", cwd=tmp_path)
    assert done.code == 0, done.err
    assert (tmp_path / ".agent-reminders" / "state.db").is_file()


@pytest.mark.parametrize(
    "command",
    [("remind", "hello"), ("pending",), ("revoke", "r1")],
    ids=["remind", "pending", "revoke"],
)
def test_remind_pending_and_revoke_name_the_missing_folder(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    typo = tmp_path / "stat"
    done = run(*command, "--session", "s1", "--store", f"sqlite:{typo / 'state.db'}", cwd=tmp_path)
    assert done.code == 1
    assert f"folder {typo} does not exist" in done.line
    assert tree(tmp_path) == []


def hook_input(cwd: Path) -> str:
    return json.dumps(
        {
            "session_id": "cc-1",
            "transcript_path": "",
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "hi",
        }
    )


def test_the_claude_code_hook_refuses_a_cwd_that_does_not_exist(tmp_path: Path) -> None:
    gone = tmp_path / "moved-away"
    done = run("hook", "claude-code", cwd=tmp_path, stdin=hook_input(gone))
    assert done.code == 1
    assert done.out == ""
    assert str(gone) in done.line
    assert "does not exist" in done.line
    assert tree(tmp_path) == []


def test_the_claude_code_hook_refuses_a_store_folder_that_does_not_exist(tmp_path: Path) -> None:
    typo = tmp_path / "stat"
    store = f"sqlite:{typo / 'state.db'}"
    done = run("hook", "claude-code", "--store", store, cwd=tmp_path, stdin=hook_input(tmp_path))
    assert done.code == 1
    assert f"folder {typo} does not exist" in done.line
    assert tree(tmp_path) == []


def test_the_claude_code_hook_still_starts_a_store_in_an_existing_project(tmp_path: Path) -> None:
    done = run("hook", "claude-code", cwd=tmp_path, stdin=hook_input(tmp_path))
    assert done.code == 0, done.err
    assert (tmp_path / ".agent-reminders" / "state.db").is_file()


# -- a read-only volume --------------------------------------------------------------------


def test_pending_reads_a_store_on_a_read_only_volume_and_a_write_says_read_only(
    read_only_view: tuple[Path, Path], tmp_path: Path
) -> None:
    folder, view = read_only_view

    async def make() -> str:
        async with SQLiteStore(folder / "state.db") as store:
            await store.create_session(Session(session_id="s1").state())
            (item,) = queue_items("CI is red on main")
            return await store.enqueue("s1", item)

    queued = anyio.run(make)
    before = hashlib.sha256((folder / "state.db").read_bytes()).hexdigest()
    store = f"sqlite:{view / 'state.db'}"
    listed = run("pending", "--session", "s1", "--store", store, "--json", cwd=tmp_path)
    assert listed.code == 0, listed.err
    assert [row["id"] for row in json.loads(listed.out)["injections"]] == [queued]
    for write in (("remind", "another"), ("revoke", queued)):
        refused = run(*write, "--session", "s1", "--store", store, cwd=tmp_path)
        assert refused.code == 1
        assert str(view / "state.db") in refused.line
        assert "read-only" in refused.line
    assert hashlib.sha256((folder / "state.db").read_bytes()).hexdigest() == before
