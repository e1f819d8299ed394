"""Issue 8, fact stores: bad paths, unencodable text, unusable and read-only stores.

The rules: a missing fact file is no facts and no error (docs/facts.md); a foreign or corrupt
file is a clear error naming it (docs/storage.md, "What an error means"); a provider that cannot
use its resource raises ProviderSkippedError, RMD-107 (docs/session-loop.md, "Providers").
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_reminders import EventLog, FactError, ProviderSkippedError, ReminderOptions, Session
from agent_reminders.facts import FactStore
from agent_reminders.providers import CANONICAL_PROVIDERS, ProviderContext, ProviderSpec
from agent_reminders.providers import project_facts as pf


def fact(claim: str = "Use PostgreSQL.", **extra: Any) -> dict[str, Any]:
    return {"kind": "decision", "claim": claim, "confidence": 0.9, **extra}


def ctx(config: Any) -> ProviderContext:
    return ProviderContext(
        event="session_start", session_id="s", payload={}, options=ReminderOptions(), config=config
    )


# ---------------------------------------------------------------- FactStore(path)


@pytest.mark.parametrize("bad", [None, 5, 2.5, b"facts.db", "", "   ", ["a.db"]])
def test_a_path_that_is_not_a_str_or_pathlike_is_a_fact_error(
    bad: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FactError) as info:
        FactStore(bad)
    assert repr(bad) in info.value.message
    assert info.value.code == "RMD-103"
    assert list(tmp_path.iterdir()) == []  # no file named "None" or "5"


def test_pathlike_paths_are_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # whatever goes wrong, no stray file in the checkout

    class Where(os.PathLike[str]):
        def __fspath__(self) -> str:
            return str(tmp_path / "pl.db")

    with FactStore(Where()) as store:
        store.store_fact(fact())
    assert (tmp_path / "pl.db").is_file()


def test_a_directory_is_a_fact_error_saying_so(tmp_path: Path) -> None:
    for create in (True, False):
        with pytest.raises(FactError, match="is a directory") as info:
            FactStore(tmp_path, create=create)
        assert str(tmp_path) in info.value.message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("kind", "deci\ud800sion"),
        ("claim", "lone \ud800 surrogate"),
        ("evidence[0].kind", None),
        ("evidence[0].ref", None),
        ("tags[1]", None),
    ],
)
def test_a_lone_surrogate_in_any_text_field_is_a_fact_error_naming_it(
    field: str, value: str | None
) -> None:
    bad = "x\ud800"
    item = fact()
    if field in ("kind", "claim"):
        item[field] = value
    elif field.startswith("evidence"):
        key = field.rsplit(".", 1)[1]
        item["evidence"] = [{"kind": "adr", "ref": "ADR-1", key: bad}]
    else:
        item["tags"] = ["fine", bad]
    with FactStore(":memory:") as store:
        with pytest.raises(FactError) as info:
            store.store_fact(item)
        assert field in info.value.message
        with pytest.raises(FactError, match=r"facts\[1\]"):
            store.store_facts([fact(), item])
        assert store.list() == []  # nothing stored


def test_a_lone_surrogate_in_the_namespace_is_a_fact_error() -> None:
    with FactStore(":memory:") as store, pytest.raises(FactError, match="namespace"):
        store.store_fact(fact(), namespace="team/\udfff")


# ---------------------------------------------------------------- project_facts: unusable stores


def test_project_facts_is_a_blocking_provider_and_declares_its_config() -> None:
    spec = next(p for p in CANONICAL_PROVIDERS if p.id == "project_facts")
    assert spec is pf.PROVIDER
    assert spec.blocking is True
    assert {
        "store",
        "path",
        "namespace",
        "max_facts",
        "min_confidence",
        "kind_filter",
        "relevance_query",
        "refresh_ratio",
    } <= set(spec.config_schema)
    assert all(not p.blocking for p in CANONICAL_PROVIDERS if p.id != "project_facts")
    assert ProviderSpec("x", ("post_step",), lambda c: None).blocking is False


def test_missing_store_and_missing_folder_are_still_no_facts(tmp_path: Path) -> None:
    for path in (tmp_path / "none.db", tmp_path / "no" / "dir" / "facts.db"):
        assert pf.evaluate(ctx({"path": str(path)})) is None
        assert not path.exists()


def _corrupt(tmp_path: Path) -> Path:
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"not a database at all\x00" * 400)
    return path


def _foreign(tmp_path: Path) -> Path:
    path = tmp_path / "foreign.db"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    raw.commit()
    raw.close()
    return path


@pytest.mark.parametrize(
    "make", [lambda p: p, _corrupt, _foreign], ids=["dir", "corrupt", "foreign"]
)
def test_an_unusable_store_makes_the_provider_skip_naming_the_file(
    make: Any, tmp_path: Path
) -> None:
    path = make(tmp_path)
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(ProviderSkippedError) as info:
        pf.evaluate(ctx({"path": str(path)}))
    assert info.value.code == "RMD-107"
    assert str(path) in info.value.message
    if before is not None:
        assert path.read_bytes() == before  # never reset


def test_an_unusable_store_is_reported_in_provider_evaluated(tmp_path: Path) -> None:
    log = EventLog()
    session = Session(
        event_log=log, reminders={"config": {"project_facts": {"path": str(_corrupt(tmp_path))}}}
    )
    # the session side (reporting and going on) is wired elsewhere; whatever it does, the
    # provider's event carries the error and never claims it fired
    with contextlib.suppress(ProviderSkippedError):
        session.fire("session_start", {})
    (record,) = [
        r
        for r in log.records
        if r.kind.endswith("provider_evaluated") and r.payload["provider_id"] == "project_facts"
    ]
    assert "corrupt.db" in record.payload["error"]
    assert record.payload["fired"] is False


# ---------------------------------------------------------------- read-only stores


def _store_with_facts(path: Path) -> None:
    with FactStore(path) as store:
        store.store_fact(fact("Read-only stores still answer."))


def _not_writable(monkeypatch: pytest.MonkeyPatch) -> None:
    # We run as root, which ignores chmod: make the code see what a normal user would.
    real = os.access

    def access(path: Any, mode: int, **kw: Any) -> bool:
        if mode & os.W_OK:
            return False
        return real(path, mode, **kw)

    monkeypatch.setattr(os, "access", access)


def test_a_read_only_store_opens_read_only_and_can_be_recalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "facts.db"
    _store_with_facts(path)
    before = path.read_bytes()
    _not_writable(monkeypatch)
    with FactStore(path, create=False) as store:
        assert store.read_only is True
        assert store.open_mode == "mode=ro"
        assert [f.claim for f in store.recall("read-only")] == ["Read-only stores still answer."]
        with pytest.raises(FactError, match="read-only"):
            store.store_fact(fact("no"))
        with pytest.raises(FactError, match="read-only"):
            store.delete("x")
    assert path.read_bytes() == before
    body = pf.evaluate(ctx({"path": str(path)}))
    assert body is not None
    assert "Read-only stores still answer." in body["body"]


def test_read_only_falls_back_to_an_immutable_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "facts.db"
    _store_with_facts(path)
    _not_writable(monkeypatch)
    real: Callable[..., sqlite3.Connection] = sqlite3.connect
    targets: list[str] = []

    def connect(target: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        targets.append(str(target))
        # what SQLite says when mode=ro needs a WAL index it may not create
        if kwargs.get("uri") and "immutable=1" not in str(target):
            raise sqlite3.OperationalError("unable to open database file")
        return real(target, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    with FactStore(path, create=False) as store:
        assert store.open_mode == "mode=ro&immutable=1"
        assert [f.claim for f in store.list()] == ["Read-only stores still answer."]
    assert targets[-1].startswith("file:")
    assert targets[-1].endswith("immutable=1")


def test_a_real_immutable_uri_open_reads_the_store(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    _store_with_facts(path)
    raw = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        assert raw.execute("SELECT claim FROM facts").fetchall() == [
            ("Read-only stores still answer.",)
        ]
    finally:
        raw.close()


def test_a_read_only_empty_file_is_not_made_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    _not_writable(monkeypatch)
    with pytest.raises(FactError, match="read-only"):
        FactStore(path)
    assert path.read_bytes() == b""
