"""The ``agent-reminders`` command line in depth (the facts commands: docs/facts.md).

Rules under test: every failure prints one clear line and exits non-zero, with no
traceback unless ``--debug``; ``--json`` where a machine reads the output; tables on a
terminal and plain text when piped.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import agent_reminders.cli.common as cli_common
import agent_reminders.cli.facts as cli_facts
from agent_reminders import explain
from agent_reminders.cli import app
from agent_reminders.facts import SCHEMA, FactError, FactStore

runner = CliRunner()

CODES = [f"RMD-{n:03d}" for n in range(1, 10)]
ENV_DB = "AGENT_REMINDERS_FACTS_DB"
FACT_KEYS = {
    "schema",
    "id",
    "kind",
    "claim",
    "confidence",
    "evidence",
    "tags",
    "namespace",
    "stored_at",
    "score",
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No fact store from the outer environment, and --debug off after every test."""
    monkeypatch.delenv(ENV_DB, raising=False)
    monkeypatch.setattr(cli_common.state, "debug", False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store" / "facts.db"


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, list(args), env=env)


def add(db: Path, claim: str, *extra: str, kind: str = "decision") -> str:
    result = invoke("facts", "add", "--db", str(db), "-k", kind, "-c", claim, *extra)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout.strip()


def search_json(db: Path, query: str, *extra: str) -> list[dict[str, Any]]:
    result = invoke("facts", "search", query, "--db", str(db), "--json", *extra)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert isinstance(data, list)
    return data


def list_json(db: Path, *extra: str) -> list[dict[str, Any]]:
    result = invoke("facts", "list", "--db", str(db), "--json", *extra)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert isinstance(data, list)
    return data


def assert_one_error_line(result: Result, *fragments: str, code: int = 1) -> str:
    """Exit ``code``, nothing on stdout, exactly one ``error: ...`` line on stderr."""
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: "), line
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


# -- explain -----------------------------------------------------------------------------------


@pytest.mark.parametrize("code", CODES)
def test_explain_every_code_in_any_spelling(code: str) -> None:
    expected = explain(code)
    assert expected.startswith(f"{code} (")
    spellings = [code, code.lower(), code.capitalize(), f"HARN-{code}", f"harn-{code.lower()}"]
    for spelling in spellings:
        result = invoke("explain", spelling)
        assert result.exit_code == 0, (spelling, result.output)
        assert result.stderr == ""
        assert result.stdout.strip() == expected
        assert result.stdout.count("\n") == expected.count("\n") + 1


def test_explain_codes_are_distinct_paragraphs() -> None:
    texts = {invoke("explain", code).stdout for code in CODES}
    assert len(texts) == len(CODES)


@pytest.mark.parametrize("code", ["RMD-000", "RMD-010", "rmd-42", "HARN-", "BOGUS", "RMD004", ""])
def test_explain_unknown_code_exit_2_one_error_line(code: str) -> None:
    result = invoke("explain", code)
    line = assert_one_error_line(result, "unknown diagnostic code", code=2)
    assert repr(code) in line
    # the known codes are listed, so the user sees what to type instead
    assert all(known in line for known in CODES)


def test_explain_unknown_code_with_debug_is_still_one_line() -> None:
    result = invoke("--debug", "explain", "RMD-999")
    assert_one_error_line(result, "'RMD-999'", code=2)


# -- help --------------------------------------------------------------------------------------


def test_help_lists_commands() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for name in ("explain", "facts", "version", "--debug"):
        assert name in result.stdout


def test_facts_help_lists_subcommands() -> None:
    result = invoke("facts", "--help")
    assert result.exit_code == 0
    for name in ("add", "search", "list", "delete"):
        assert name in result.stdout


# -- facts add ---------------------------------------------------------------------------------


def test_add_prints_id_and_creates_db_and_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "c" / "facts.db"
    assert not path.parent.exists()
    result = invoke("facts", "add", "--db", str(path), "--kind", "decision", "--claim", "Use Pg.")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    fid = lines[0]
    assert len(fid) == 36
    assert fid.count("-") == 4
    assert path.is_file()
    with FactStore(path, create=False) as store:
        [fact] = store.list()
    assert fact.id == fid
    assert fact.claim == "Use Pg."
    assert fact.confidence == 0.8  # the default
    assert fact.namespace == "project/facts"


def test_add_json_output(db: Path) -> None:
    result = invoke(
        "facts", "add", "--db", str(db), "-k", "decision", "-c", "Use Pg.", "-n", "team/x", "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"id", "namespace", "db"}
    assert data["namespace"] == "team/x"
    assert data["db"] == str(db)
    [fact] = list_json(db, "--namespace", "team/x")
    assert fact["id"] == data["id"]


def test_add_all_options_round_trip(db: Path) -> None:
    fid = add(
        db,
        "  Releases are cut from main.  ",
        "--confidence",
        "0.9",
        "-e",
        "adr:ADR-12",
        "--evidence",
        "file: docs/release.md ",
        "-t",
        "release",
        "--tag",
        "git",
        "-t",
        "release",
        kind="Release-Policy",
    )
    [fact] = list_json(db)
    assert set(fact) == FACT_KEYS
    assert fact["schema"] == SCHEMA
    assert fact["id"] == fid
    assert fact["kind"] == "release_policy"  # lower-cased, '-' -> '_'
    assert fact["claim"] == "Releases are cut from main."
    assert fact["confidence"] == 0.9
    assert fact["evidence"] == [
        {"kind": "adr", "ref": "ADR-12"},
        {"kind": "file", "ref": "docs/release.md"},
    ]
    assert fact["tags"] == ["release", "git"]
    assert fact["score"] == 0.0


def test_add_evidence_ref_may_contain_colons(db: Path) -> None:
    add(db, "The API lives at a URL.", "-e", "url:https://example.com:8443/api")
    [fact] = list_json(db)
    assert fact["evidence"] == [{"kind": "url", "ref": "https://example.com:8443/api"}]


@pytest.mark.parametrize("confidence", ["0", "1", "0.0", "1.0"])
def test_add_confidence_bounds_are_inclusive(db: Path, confidence: str) -> None:
    add(db, "Bound.", "--confidence", confidence)
    [fact] = list_json(db)
    assert fact["confidence"] == float(confidence)


def test_add_uses_env_db_and_db_option_overrides_it(tmp_path: Path) -> None:
    env_db = tmp_path / "env" / "facts.db"
    opt_db = tmp_path / "opt" / "facts.db"
    env = {ENV_DB: str(env_db)}
    result = invoke("facts", "add", "-k", "decision", "-c", "From env.", env=env)
    assert result.exit_code == 0, result.output
    assert env_db.is_file()
    result = invoke("facts", "list", "--json", env=env)
    assert [f["claim"] for f in json.loads(result.stdout)] == ["From env."]
    result = invoke("facts", "search", "env", "--json", env=env)
    assert [f["claim"] for f in json.loads(result.stdout)] == ["From env."]

    result = invoke("facts", "add", "--db", str(opt_db), "-k", "d", "-c", "From option.", env=env)
    assert result.exit_code == 0, result.output
    assert [f["claim"] for f in list_json(opt_db)] == ["From option."]
    result = invoke("facts", "list", "--json", env=env)
    assert [f["claim"] for f in json.loads(result.stdout)] == ["From env."]


def test_add_default_db_is_under_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("facts", "add", "-k", "decision", "-c", "Default path.")
    assert result.exit_code == 0, result.output
    assert (tmp_path / ".agent-reminders" / "facts.db").is_file()
    result = invoke("facts", "list", "--json")
    assert [f["claim"] for f in json.loads(result.stdout)] == ["Default path."]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["-c", "x", "--confidence", "3"], ["confidence", "[0, 1]", "3"]),
        (["-c", "x", "--confidence", "-0.1"], ["confidence", "-0.1"]),
        (["-c", "x", "--confidence", "1.0001"], ["confidence"]),
        (["-c", "x", "--confidence", "nan"], ["confidence"]),
        (["-c", "x", "--confidence", "inf"], ["confidence"]),
        (["-c", "   "], ["claim", "non-blank"]),
        (["-c", ""], ["claim"]),
        (["-c", "x", "-e", "nocolon"], ["--evidence", "KIND:REF", "'nocolon'"]),
        (["-c", "x", "-e", "file:"], ["--evidence", "'file:'"]),
        (["-c", "x", "-e", ":ref"], ["--evidence", "':ref'"]),
        (["-c", "x", "-e", "  : ref"], ["--evidence"]),
        (["-c", "x", "-e", "file:ok", "-e", "bad"], ["--evidence", "'bad'"]),
        (["-c", "x", "-t", "  "], ["tags"]),
        (["-c", "x", "-n", "  "], ["namespace"]),
    ],
)
def test_add_bad_input_is_one_error_line_naming_the_field(
    db: Path, args: list[str], fragments: list[str]
) -> None:
    result = invoke("facts", "add", "--db", str(db), "-k", "decision", *args)
    assert_one_error_line(result, *fragments)
    if db.exists():  # nothing is stored
        with FactStore(db, create=False) as store:
            assert store.list() == []
            assert store.list(namespace="x") == []


def test_add_blank_kind_is_one_error_line(db: Path) -> None:
    result = invoke("facts", "add", "--db", str(db), "-k", " ", "-c", "x")
    assert_one_error_line(result, "kind")


def test_add_bad_input_after_good_facts_stores_nothing_more(db: Path) -> None:
    add(db, "Good one.")
    result = invoke("facts", "add", "--db", str(db), "-k", "d", "-c", "bad", "--confidence", "3")
    assert_one_error_line(result, "confidence")
    assert [f["claim"] for f in list_json(db)] == ["Good one."]


def test_add_db_under_a_regular_file_is_one_error_line(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory", encoding="utf-8")
    result = invoke("facts", "add", "--db", str(blocker / "sub" / "f.db"), "-k", "d", "-c", "x")
    assert_one_error_line(result, "afile")


def test_debug_before_subcommand_lets_fact_error_propagate(db: Path) -> None:
    result = invoke(
        "--debug", "facts", "add", "--db", str(db), "-k", "d", "-c", "x", "--confidence", "3"
    )
    assert result.exit_code != 0
    assert isinstance(result.exception, FactError)
    assert "confidence" in str(result.exception)
    assert result.exc_info is not None
    assert result.exc_info[2] is not None  # a traceback is available
    assert not result.stderr.startswith("error: ")


def test_debug_lets_evidence_value_error_propagate(db: Path) -> None:
    result = invoke("--debug", "facts", "add", "--db", str(db), "-k", "d", "-c", "x", "-e", "bad")
    assert result.exit_code != 0
    assert isinstance(result.exception, ValueError)
    assert "--evidence" in str(result.exception)


def test_debug_flag_does_not_leak_into_next_invocation(db: Path) -> None:
    invoke("--debug", "facts", "add", "--db", str(db), "-k", "d", "-c", "x", "--confidence", "3")
    result = invoke("facts", "add", "--db", str(db), "-k", "d", "-c", "x", "--confidence", "3")
    assert_one_error_line(result, "confidence")


# -- usage errors (every failure is one clear line) --------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["facts", "add", "-k", "decision"], "--claim"),
        (["facts", "add", "-k", "decision", "-c", "x", "--confidence", "abc"], "--confidence"),
        (["facts", "search", "q", "--limit", "500"], "--limit"),
    ],
)
def test_usage_error_is_one_clear_line(tmp_path: Path, args: list[str], option: str) -> None:
    result = invoke(*args, "--db", str(tmp_path / "f.db"))
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert option in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr


# -- facts search ------------------------------------------------------------------------------


def _seed(db: Path) -> dict[str, str]:
    ids = {}
    ids["pg"] = add(
        db, "Use PostgreSQL for storage.", "--confidence", "0.9", "-e", "adr:ADR-7", "-t", "db"
    )
    ids["ruff"] = add(db, "Format code with ruff.", "--confidence", "0.6", kind="convention")
    ids["tz"] = add(db, "Store timestamps in UTC.", "--confidence", "0.3", kind="constraint")
    ids["pg_pool"] = add(db, "PostgreSQL connections go through a pool.", "--confidence", "0.7")
    return ids


def test_search_json_is_fact_dicts_best_match_first(db: Path) -> None:
    ids = _seed(db)
    found = search_json(db, "which PostgreSQL storage?")
    assert len(found) == 4  # matches first, then fill facts up to the default limit of 5
    for fact in found:
        assert set(fact) == FACT_KEYS
        assert fact["schema"] == SCHEMA
        assert fact["namespace"] == "project/facts"
        assert fact["score"] >= 0
    assert found[0]["id"] == ids["pg"]  # matches two terms
    assert found[1]["id"] == ids["pg_pool"]  # matches one term
    assert found[0]["score"] > 0
    assert found[1]["score"] > 0
    assert found[0]["evidence"] == [{"kind": "adr", "ref": "ADR-7"}]
    assert found[0]["tags"] == ["db"]
    # facts that match no term fill the rest, newest first, with score 0
    assert [f["id"] for f in found[2:]] == [ids["tz"], ids["ruff"]]
    assert [f["score"] for f in found[2:]] == [0.0, 0.0]
    scores = [f["score"] for f in found]
    assert scores == sorted(scores, reverse=True)


def test_search_matches_tags_evidence_and_kind(db: Path) -> None:
    ids = _seed(db)
    assert search_json(db, "ADR-7", "-l", "1")[0]["id"] == ids["pg"]
    assert search_json(db, "convention", "-l", "1")[0]["id"] == ids["ruff"]
    found = search_json(db, "db", "-l", "1")
    assert found[0]["id"] == ids["pg"]
    assert found[0]["score"] > 0


def test_search_folds_case_and_diacritics_and_keeps_unicode_in_json(db: Path) -> None:
    fid = add(db, "Le café est servi à Zürich.")
    add(db, "Something else entirely.")
    result = invoke("facts", "search", "CAFE zurich", "--db", str(db), "--json", "-l", "1")
    assert result.exit_code == 0
    assert "Le café est servi à Zürich." in result.stdout  # not \u-escaped
    [fact] = json.loads(result.stdout)
    assert fact["id"] == fid
    assert fact["score"] > 0


def test_search_limit(db: Path) -> None:
    _seed(db)
    assert len(search_json(db, "anything", "--limit", "2")) == 2
    assert len(search_json(db, "anything", "-l", "1")) == 1
    assert search_json(db, "PostgreSQL", "-l", "0") == []
    assert len(search_json(db, "anything", "-l", "100")) == 4


def test_search_min_confidence(db: Path) -> None:
    ids = _seed(db)
    found = search_json(db, "PostgreSQL", "--min-confidence", "0.75")
    assert [f["id"] for f in found] == [ids["pg"]]
    found = search_json(db, "storage", "--min-confidence", "0.5")
    assert {f["id"] for f in found} == {ids["pg"], ids["pg_pool"], ids["ruff"]}
    assert all(f["confidence"] >= 0.5 for f in found)


def test_search_kind_filter_repeatable_and_normalized(db: Path) -> None:
    ids = _seed(db)
    found = search_json(db, "anything", "--kind", "Convention")
    assert [f["id"] for f in found] == [ids["ruff"]]
    found = search_json(db, "anything", "-k", "convention", "-k", "CONSTRAINT")
    assert {f["id"] for f in found} == {ids["ruff"], ids["tz"]}
    add(db, "Design notes live in docs.", kind="design-note")
    found = search_json(db, "docs", "-k", "Design-Note")
    assert [f["kind"] for f in found] == ["design_note"]
    assert search_json(db, "anything", "-k", "nonexistent") == []


def test_search_no_match_still_lists_fill_facts(db: Path) -> None:
    ids = _seed(db)
    found = search_json(db, "kubernetes helm zebra")
    assert [f["id"] for f in found] == [ids["pg_pool"], ids["tz"], ids["ruff"], ids["pg"]]
    assert all(f["score"] == 0.0 for f in found)


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "NEAR(",
        "NEAR(a b",
        "*",
        "-x",
        "storage -x NOT ruff",
        "postgres*",
        "claim:storage",
        "a AND OR NOT b",
        "(((",
        "^storage",
        "{claim kind}: x",
        "''",
        "   ",
        "\u00a0\u200b",
        "x" * 5000,
        " ".join(f"w{i}" for i in range(200)),
    ],
)
def test_search_fts5_syntax_never_errors(db: Path, query: str) -> None:
    _seed(db)
    # "--" ends the options, so a query that starts with "-" is still the query
    result = invoke("facts", "search", "--db", str(db), "--json", "--", query)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    found = json.loads(result.stdout)
    assert len(found) == 4  # every fact is still listed (matched or filling)
    plain = invoke("facts", "search", "--db", str(db), "--", query)
    assert plain.exit_code == 0, plain.output
    assert len(plain.stdout.splitlines()) == 4


def test_search_fts5_syntax_words_still_match(db: Path) -> None:
    ids = _seed(db)
    found = search_json(db, '"PostgreSQL storage', "-l", "1")
    assert found[0]["id"] == ids["pg"]
    assert found[0]["score"] > 0
    found = search_json(db, "NEAR(ruff", "-l", "1")
    assert found[0]["id"] == ids["ruff"]
    assert found[0]["score"] > 0


def test_search_plain_output_is_tab_separated_lines(db: Path) -> None:
    ids = _seed(db)
    result = invoke("facts", "search", "PostgreSQL storage", "--db", str(db))
    assert result.exit_code == 0
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    rows = [line.split("\t") for line in lines]
    assert all(len(row) == 6 for row in rows)
    first = rows[0]
    assert first[0] == ids["pg"]
    assert first[1] == "decision"
    assert first[2] == "0.90"
    assert first[3] == "Use PostgreSQL for storage."
    assert first[4] == "adr:ADR-7"
    assert float(first[5]) > 0
    assert rows[1][0] == ids["pg_pool"]
    assert rows[1][2] == "0.70"
    assert rows[1][4] == ""  # no evidence
    # fill facts: score 0, newest first
    assert [row[0] for row in rows[2:]] == [ids["tz"], ids["ruff"]]
    assert [float(row[5]) for row in rows[2:]] == [0.0, 0.0]
    assert rows[2][2] == "0.30"
    assert rows[3][1] == "convention"
    # plain, not a table
    assert not any(ch in result.stdout for ch in "┃│━─┏")


def test_search_plain_output_joins_several_evidence(db: Path) -> None:
    add(db, "Two sources.", "-e", "adr:ADR-1", "-e", "file:src/app.py")
    result = invoke("facts", "search", "sources", "--db", str(db))
    [line] = result.stdout.splitlines()
    assert line.split("\t")[4] == "adr:ADR-1 file:src/app.py"


def test_search_missing_db_is_one_error_line_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "facts.db"
    for extra in ([], ["--json"]):
        result = invoke("facts", "search", "anything", "--db", str(missing), *extra)
        assert_one_error_line(result, str(missing))
    assert not missing.exists()  # searching does not create a store
    assert not missing.parent.exists()


def test_search_empty_namespace_says_no_facts(db: Path) -> None:
    _seed(db)
    result = invoke("facts", "search", "PostgreSQL", "--db", str(db), "-n", "other/ns")
    assert result.exit_code == 0
    # issue 8: piped output with no results is empty; the note goes to stderr
    assert result.stdout == ""
    assert result.stderr.strip() == "no facts"
    assert search_json(db, "PostgreSQL", "--namespace", "other/ns") == []


def test_search_empty_store_says_no_facts(db: Path) -> None:
    with FactStore(db):  # a valid store with no facts
        pass
    result = invoke("facts", "search", "x", "--db", str(db))
    assert result.exit_code == 0
    assert result.stdout == ""  # issue 8: the note is on stderr when piped
    assert result.stderr.strip() == "no facts"


def test_search_not_a_fact_store_is_one_error_line(tmp_path: Path) -> None:
    text_file = tmp_path / "notes.txt"
    text_file.write_text("hello, not sqlite\n" * 100, encoding="utf-8")
    result = invoke("facts", "search", "x", "--db", str(text_file))
    assert_one_error_line(result, str(text_file))

    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE users (id INTEGER)")
    con.commit()
    con.close()
    result = invoke("facts", "list", "--db", str(other))
    assert_one_error_line(result, str(other), "users")


def test_search_blank_namespace_is_one_error_line(db: Path) -> None:
    _seed(db)
    result = invoke("facts", "search", "x", "--db", str(db), "-n", " ")
    assert_one_error_line(result, "namespace")


# -- facts list --------------------------------------------------------------------------------


def test_list_newest_first_plain_and_json(db: Path) -> None:
    ids = [add(db, f"Fact number {i}.") for i in range(5)]
    found = list_json(db)
    assert [f["id"] for f in found] == ids[::-1]
    assert all(f["schema"] == SCHEMA for f in found)
    assert all(f["score"] == 0.0 for f in found)
    result = invoke("facts", "list", "--db", str(db))
    assert result.exit_code == 0
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [row[0] for row in rows] == ids[::-1]
    assert all(len(row) == 5 for row in rows)  # no score column when listing
    assert rows[0][1:] == ["decision", "0.80", "Fact number 4.", ""]


def test_list_namespaces_are_isolated(db: Path) -> None:
    a = add(db, "In the default namespace.")
    b = add(db, "In team one.", "-n", "team/one")
    c = add(db, "In team two.", "--namespace", "team/two")
    assert [f["id"] for f in list_json(db)] == [a]
    assert [f["id"] for f in list_json(db, "--namespace", "team/one")] == [b]
    assert [f["id"] for f in list_json(db, "-n", "team/two")] == [c]
    assert list_json(db, "-n", "team/three") == []
    assert [f["namespace"] for f in list_json(db, "-n", "team/one")] == ["team/one"]
    # search never crosses namespaces either
    assert [f["id"] for f in search_json(db, "team", "-n", "team/one")] == [b]
    assert [f["id"] for f in search_json(db, "team namespace")] == [a]


def test_list_empty_namespace_says_no_facts(db: Path) -> None:
    add(db, "Something.")
    result = invoke("facts", "list", "--db", str(db), "-n", "empty/ns")
    assert result.exit_code == 0
    assert result.stdout == ""  # issue 8: the note is on stderr when piped
    assert result.stderr == "no facts\n"


def test_list_missing_db_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    result = invoke("facts", "list", "--db", str(missing))
    assert_one_error_line(result, str(missing))
    assert not missing.exists()


# -- facts delete ------------------------------------------------------------------------------


def test_delete_then_second_delete_fails(db: Path) -> None:
    keep = add(db, "Keep me.")
    gone = add(db, "Delete me.")
    result = invoke("facts", "delete", gone, "--db", str(db))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"deleted {gone}"
    assert [f["id"] for f in list_json(db)] == [keep]
    # the deleted fact is gone from the search index too
    assert [f["id"] for f in search_json(db, "delete")] == [keep]
    assert search_json(db, "delete")[0]["score"] == 0.0

    again = invoke("facts", "delete", gone, "--db", str(db))
    assert_one_error_line(again, gone, str(db))
    assert [f["id"] for f in list_json(db)] == [keep]


def test_delete_unknown_id_and_missing_db(tmp_path: Path, db: Path) -> None:
    add(db, "Something.")
    result = invoke("facts", "delete", "not-an-id", "--db", str(db))
    assert_one_error_line(result, "'not-an-id'")
    missing = tmp_path / "missing.db"
    result = invoke("facts", "delete", "x", "--db", str(missing))
    assert_one_error_line(result, str(missing))


def test_delete_uses_env_db(tmp_path: Path) -> None:
    path = tmp_path / "env.db"
    fid = add(path, "Via env.")
    result = invoke("facts", "delete", fid, env={ENV_DB: str(path)})
    assert result.exit_code == 0, result.output
    assert list_json(path) == []


# -- table output on a terminal ----------------------------------------------------------------


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_common, "is_terminal", lambda: True)
    monkeypatch.setattr(cli_facts, "is_terminal", lambda: True)


@pytest.mark.usefixtures("terminal")
def test_search_on_a_terminal_prints_a_table(db: Path) -> None:
    fid = add(db, "Use PostgreSQL.", "--confidence", "0.9", "-e", "adr:ADR-7")
    result = invoke("facts", "search", "PostgreSQL", "--db", str(db), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    for header in ("id", "kind", "conf.", "claim", "evidence", "score"):
        assert header in out
    assert "Use PostgreSQL." in out
    assert fid in out
    assert "0.90" in out
    assert "adr:ADR-7" in out
    assert "\t" not in out  # not the piped format
    assert any(ch in out for ch in "┃│━─┏")  # a drawn table


@pytest.mark.usefixtures("terminal")
def test_list_on_a_terminal_prints_a_table_without_score(db: Path) -> None:
    add(db, "Format with ruff.", kind="convention")
    result = invoke("facts", "list", "--db", str(db), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    for header in ("id", "kind", "conf.", "claim", "evidence"):
        assert header in out
    assert "score" not in out
    assert "Format with ruff." in out
    assert "convention" in out


@pytest.mark.usefixtures("terminal")
def test_json_wins_over_the_terminal_table(db: Path) -> None:
    add(db, "Use PostgreSQL.")
    result = invoke("facts", "search", "PostgreSQL", "--db", str(db), "--json")
    assert json.loads(result.stdout)[0]["claim"] == "Use PostgreSQL."
    assert json.loads(invoke("facts", "list", "--db", str(db), "--json").stdout)


@pytest.mark.usefixtures("terminal")
def test_empty_result_on_a_terminal_says_no_facts(db: Path) -> None:
    add(db, "Use PostgreSQL.")
    result = invoke("facts", "list", "--db", str(db), "-n", "none")
    assert result.stdout.strip() == "no facts"


# -- unexpected internal errors ----------------------------------------------------------------


def _boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError("boom")


def test_internal_error_is_one_line_with_hint(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add(db, "Something.")
    monkeypatch.setattr(FactStore, "recall", _boom)
    result = invoke("facts", "search", "x", "--db", str(db))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "error: internal error: RuntimeError: boom (run with --debug for details)\n"
    )
    assert "Traceback" not in result.output


def test_internal_error_with_debug_propagates(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add(db, "Something.")
    monkeypatch.setattr(FactStore, "recall", _boom)
    result = invoke("--debug", "facts", "search", "x", "--db", str(db))
    assert result.exit_code != 0
    assert isinstance(result.exception, RuntimeError)
    assert str(result.exception) == "boom"
    assert result.exc_info is not None
    assert result.exc_info[2] is not None
    assert "internal error" not in result.stderr


def test_internal_error_in_list_and_add(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add(db, "Something.")
    monkeypatch.setattr(FactStore, "list", _boom)
    result = invoke("facts", "list", "--db", str(db))
    assert_one_error_line(result, "internal error: RuntimeError: boom", "--debug")
    monkeypatch.setattr(FactStore, "store_fact", _boom)
    result = invoke("facts", "add", "--db", str(db), "-k", "d", "-c", "x")
    assert_one_error_line(result, "internal error: RuntimeError: boom", "--debug")


# -- the installed command, for real -----------------------------------------------------------


def _installed() -> str:
    exe = shutil.which("agent-reminders", path=str(Path(sys.executable).parent))
    assert exe is not None, "agent-reminders is not installed next to the running Python"
    return exe


def _run(exe: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != ENV_DB}
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [exe, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
        cwd=cwd,
        env=env,
    )


def test_installed_command_add_search_list_and_failure(tmp_path: Path) -> None:
    exe = _installed()
    db = tmp_path / "sub" / "facts.db"

    done = _run(
        exe,
        "facts",
        "add",
        "--db",
        str(db),
        "--kind",
        "decision",
        "--claim",
        "Use PostgreSQL for storage.",
        "--confidence",
        "0.9",
        "--evidence",
        "adr:ADR-7",
        "--tag",
        "db",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    fid = done.stdout.strip()
    assert len(done.stdout.splitlines()) == 1
    assert db.is_file()

    done = _run(exe, "facts", "search", "which storage?", "--db", str(db), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [fact] = json.loads(done.stdout)
    assert fact["schema"] == SCHEMA
    assert fact["id"] == fid
    assert fact["claim"] == "Use PostgreSQL for storage."
    assert fact["confidence"] == 0.9
    assert fact["evidence"] == [{"kind": "adr", "ref": "ADR-7"}]
    assert fact["tags"] == ["db"]
    assert fact["score"] > 0

    done = _run(exe, "facts", "list", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # piped: plain text, one tab-separated line, no table
    assert done.stdout.splitlines() == [
        f"{fid}\tdecision\t0.90\tUse PostgreSQL for storage.\tadr:ADR-7"
    ]

    done = _run(
        exe,
        "facts",
        "add",
        "--db",
        str(db),
        "-k",
        "d",
        "-c",
        "x",
        "--confidence",
        "2",
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error:")
    assert "confidence" in lines[0]
    assert "Traceback" not in done.stderr

    # the failed add stored nothing
    done = _run(exe, "facts", "list", "--db", str(db), "--json", cwd=tmp_path)
    assert [f["id"] for f in json.loads(done.stdout)] == [fid]


def test_installed_command_debug_shows_traceback(tmp_path: Path) -> None:
    exe = _installed()
    db = tmp_path / "f.db"
    args = ["--debug", "facts", "add", "--db", str(db), "-k", "d", "-c", "x", "--confidence", "2"]
    done = _run(exe, *args, cwd=tmp_path)
    assert done.returncode != 0
    assert "Traceback" in done.stderr
    assert "FactError" in done.stderr


def test_installed_command_missing_db_is_one_line(tmp_path: Path) -> None:
    exe = _installed()
    missing = tmp_path / "missing.db"
    done = _run(exe, "facts", "search", "x", "--db", str(missing), cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error:")
    assert str(missing) in lines[0]


def test_installed_command_help(tmp_path: Path) -> None:
    exe = _installed()
    done = _run(exe, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "explain" in done.stdout
    assert "facts" in done.stdout
    done = _run(exe, "explain", "harn-rmd-003", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip() == explain("RMD-003")
