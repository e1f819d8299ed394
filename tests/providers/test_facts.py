"""The fact store (docs/facts.md): ``FactStore`` on SQLite with an FTS5 index ranked by ``bm25()``.

Covers validation (schema ``fact.v1``), round-trips, ranking, filters, FTS5-safe queries,
deletion, large-store term selection, files and durability, and concurrent writers.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_reminders
from agent_reminders.facts import DEFAULT_NAMESPACE, Fact, FactError, FactStore


def fact(claim: str, **extra: Any) -> dict[str, Any]:
    """A valid fact mapping with ``claim`` (kind ``note``, confidence 0.9)."""
    return {"kind": "note", "claim": claim, "confidence": 0.9, **extra}


@pytest.fixture
def store() -> Iterator[FactStore]:
    s = FactStore(":memory:")
    yield s
    s.close()


def ids(facts: list[Fact]) -> list[str]:
    return [f.id for f in facts]


# ---------------------------------------------------------------- storing and round-trips


def test_store_fact_returns_an_id_and_fields_round_trip(store: FactStore) -> None:
    before = time.time()
    fid = store.store_fact(
        {
            "kind": "Design-Note",
            "claim": "  Use WAL journaling for the state database.  ",
            "confidence": 1,
            "evidence": [{"kind": "adr", "ref": "ADR-7"}, {"kind": "file", "ref": "db.py"}],
            "tags": ["db", "wal"],
        }
    )
    after = time.time()
    assert isinstance(fid, str)
    assert fid.strip()

    (listed,) = store.list()
    (recalled,) = store.recall("journaling")
    for f in (listed, recalled):
        assert f.id == fid
        assert f.kind == "design_note"
        assert f.claim == "Use WAL journaling for the state database."
        assert f.confidence == 1.0
        assert type(f.confidence) is float
        assert f.evidence == ({"kind": "adr", "ref": "ADR-7"}, {"kind": "file", "ref": "db.py"})
        assert isinstance(f.evidence, tuple)
        assert f.tags == ("db", "wal")
        assert isinstance(f.tags, tuple)
        assert f.namespace == DEFAULT_NAMESPACE == "project/facts"
        assert type(f.stored_at) is float
        assert before - 1 <= f.stored_at <= after + 1
    assert listed.score == 0.0
    assert recalled.score > 0


def test_each_fact_gets_a_new_id(store: FactStore) -> None:
    first = store.store_fact(fact("same claim"))
    second = store.store_fact(fact("same claim"))
    assert first != second
    assert set(ids(store.list())) == {first, second}


def test_evidence_and_tags_are_optional(store: FactStore) -> None:
    store.store_fact({"kind": "note", "claim": "bare fact", "confidence": 0.5})
    store.store_fact({"kind": "note", "claim": "empty lists", "confidence": 0.5, "evidence": []})
    for f in store.list():
        assert f.evidence == ()
        assert f.tags == ()


@pytest.mark.parametrize("confidence", [0, 1, 0.0, 1.0, 0.5])
def test_confidence_bounds_are_inclusive(store: FactStore, confidence: float) -> None:
    store.store_fact(fact("bounded", confidence=confidence))
    (f,) = store.list()
    assert f.confidence == float(confidence)
    assert type(f.confidence) is float


def test_fact_is_frozen_and_to_dict_is_fact_v1(store: FactStore) -> None:
    store.store_fact(fact("frozen claim", evidence=[{"kind": "doc", "ref": "README"}], tags=["x"]))
    (f,) = store.recall("frozen")
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.claim = "changed"  # type: ignore[misc]
    data = f.to_dict()
    assert data["schema"] == "fact.v1"
    assert data["id"] == f.id
    assert data["claim"] == "frozen claim"
    assert data["evidence"] == [{"kind": "doc", "ref": "README"}]
    assert data["tags"] == ["x"]
    assert data["namespace"] == "project/facts"
    assert data["score"] == f.score > 0
    assert json.loads(json.dumps(data)) == data


# ---------------------------------------------------------------- validation

GOOD = {"kind": "note", "claim": "ok", "confidence": 0.5}

BAD_FACTS: list[tuple[str, Any, str]] = [
    ("not-a-mapping", ["kind", "claim"], "mapping"),
    ("not-a-mapping-str", "a fact", "mapping"),
    ("unknown-field", {**GOOD, "colour": "red"}, "colour"),
    ("missing-kind", {"claim": "ok", "confidence": 0.5}, "kind"),
    ("blank-kind", {**GOOD, "kind": "   "}, "kind"),
    ("non-string-kind", {**GOOD, "kind": 3}, "kind"),
    ("missing-claim", {"kind": "note", "confidence": 0.5}, "claim"),
    ("blank-claim", {**GOOD, "claim": " \n\t "}, "claim"),
    ("missing-confidence", {"kind": "note", "claim": "ok"}, "confidence"),
    ("bool-confidence", {**GOOD, "confidence": True}, "confidence"),
    ("string-confidence", {**GOOD, "confidence": "0.9"}, "confidence"),
    ("nan-confidence", {**GOOD, "confidence": math.nan}, "confidence"),
    ("inf-confidence", {**GOOD, "confidence": math.inf}, "confidence"),
    ("negative-confidence", {**GOOD, "confidence": -0.1}, "confidence"),
    ("too-big-confidence", {**GOOD, "confidence": 1.1}, "confidence"),
    ("evidence-not-list", {**GOOD, "evidence": "ADR-7"}, "evidence"),
    ("evidence-mapping", {**GOOD, "evidence": {"kind": "adr", "ref": "x"}}, "evidence"),
    ("evidence-missing-ref", {**GOOD, "evidence": [{"kind": "adr"}]}, "evidence"),
    (
        "evidence-extra-key",
        {**GOOD, "evidence": [{"kind": "adr", "ref": "x", "url": "http://x"}]},
        "evidence",
    ),
    ("evidence-blank-kind", {**GOOD, "evidence": [{"kind": " ", "ref": "x"}]}, "evidence"),
    ("evidence-blank-ref", {**GOOD, "evidence": [{"kind": "adr", "ref": ""}]}, "evidence"),
    ("evidence-non-string", {**GOOD, "evidence": [{"kind": "adr", "ref": 7}]}, "evidence"),
    ("evidence-item-string", {**GOOD, "evidence": ["ADR-7"]}, "evidence"),
    ("tags-not-list", {**GOOD, "tags": "db"}, "tags"),
    ("tags-blank", {**GOOD, "tags": ["db", "  "]}, "tags"),
    ("tags-non-string", {**GOOD, "tags": ["db", 3]}, "tags"),
]


@pytest.mark.parametrize(
    ("bad", "field"), [(b, f) for _, b, f in BAD_FACTS], ids=[n for n, _, _ in BAD_FACTS]
)
def test_malformed_fact_is_rejected_naming_the_field(
    store: FactStore, bad: Any, field: str
) -> None:
    kept = store.store_fact(fact("an earlier good fact"))
    before = store.list()
    with pytest.raises(FactError) as info:
        store.store_fact(bad)
    assert isinstance(info.value, ValueError)
    assert field in str(info.value)
    assert store.list() == before
    assert ids(store.list()) == [kept]


def test_evidence_error_names_the_item_index(store: FactStore) -> None:
    good_item = {"kind": "adr", "ref": "ADR-1"}
    with pytest.raises(FactError, match=r"evidence\[1\]"):
        store.store_fact({**GOOD, "evidence": [good_item, {"kind": "adr"}]})
    assert store.list() == []


def test_fact_error_is_a_value_error() -> None:
    assert issubclass(FactError, ValueError)


def test_store_facts_validates_all_first(store: FactStore) -> None:
    batch = [fact("first good"), fact("second good"), {**GOOD, "confidence": 2}, fact("after")]
    with pytest.raises(FactError) as info:
        store.store_facts(batch)
    message = str(info.value)
    assert "2" in message
    assert "facts[2]" in message
    assert "confidence" in message
    assert store.list() == []
    assert [f.score for f in store.recall("good")] == []


def test_store_facts_stores_all_valid_facts(store: FactStore) -> None:
    new = store.store_facts([fact("one alpha"), fact("two beta"), fact("three gamma")])
    assert len(new) == len(set(new)) == 3
    assert {f.claim for f in store.list()} == {"one alpha", "two beta", "three gamma"}
    assert set(ids(store.list())) == set(new)


# ---------------------------------------------------------------- ranking


def test_more_matched_terms_rank_first_even_when_longer(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    with FactStore(path) as s:
        short = s.store_fact(fact("alpha alpha alpha"))
        longer = s.store_fact(fact("alpha beta " + " ".join(f"filler{i}" for i in range(40))))
        for i in range(5):  # "beta" is common, so BM25 alone would favour the short fact
            s.store_fact(fact(f"beta gamma {i}"))
        # premise: raw BM25 puts the short one-term fact first
        raw = sqlite3.connect(path)
        try:
            best = raw.execute(
                "SELECT f.id FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid "
                "WHERE facts_fts MATCH 'alpha OR beta' ORDER BY bm25(facts_fts) LIMIT 1"
            ).fetchone()[0]
        finally:
            raw.close()
        assert best == short

        found = s.recall("alpha beta", limit=7)
        assert ids(found)[:2] == [longer, short]
        assert all(f.score > 0 for f in found)


def test_scores_never_increase_down_the_list(store: FactStore) -> None:
    """Recall is sorted by score, best first, and a higher score means a better
    match — so the scores of the returned facts must not increase down the list, also when a
    fact matching more query terms is ranked above a shorter one-term match."""
    store.store_fact(fact("alpha alpha alpha"))
    store.store_fact(fact("alpha beta " + " ".join(f"filler{i}" for i in range(40))))
    for i in range(5):
        store.store_fact(fact(f"beta gamma {i}"))
    found = store.recall("alpha beta", limit=7)
    assert found[0].claim.startswith("alpha beta")
    scores = [f.score for f in found]
    assert scores == sorted(scores, reverse=True), scores


def test_ties_go_to_the_newest(store: FactStore) -> None:
    older = store.store_fact(fact("Use tabs for indentation."))
    newer = store.store_fact(fact("Use tabs for indentation."))
    found = store.recall("tabs indentation")
    assert ids(found) == [newer, older]
    assert found[0].score == found[1].score > 0


def test_bm25_decides_in_a_larger_corpus(store: FactStore) -> None:
    """300 facts: a rare term outranks a common one, a short match outranks a long one,
    regardless of recency."""
    rare = store.store_fact(fact("cache uses zebra striping"))  # oldest
    short = store.store_fact(fact("quokka"))
    filler = [
        fact(f"service handles request batch {i}" + (" yak" if i % 5 == 0 else ""))
        for i in range(294)
    ]
    store.store_facts(filler)
    long_quokka = store.store_fact(fact("quokka " + " ".join(f"word{i}" for i in range(30))))
    common = store.store_fact(fact("cache uses yak striping"))  # newest
    assert len(store.list()) == 298

    found = store.recall("zebra yak", limit=10)
    assert found[0].id == rare
    assert common in ids(found)
    by_id = {f.id: f for f in found}
    assert by_id[rare].score > by_id[common].score > 0

    found = store.recall("quokka", limit=10)
    assert ids(found)[:2] == [short, long_quokka]
    assert found[0].score > found[1].score > 0


def test_unmatched_facts_fill_newest_first_with_score_zero(store: FactStore) -> None:
    a = store.store_fact(fact("oldest unrelated"))
    match = store.store_fact(fact("the parser is recursive descent"))
    b = store.store_fact(fact("middle unrelated"))
    c = store.store_fact(fact("newest unrelated"))
    found = store.recall("parser", limit=4)
    assert ids(found) == [match, c, b, a]
    assert found[0].score > 0
    assert [f.score for f in found[1:]] == [0.0, 0.0, 0.0]


def test_limit_is_respected(store: FactStore) -> None:
    store.store_facts([fact(f"limit fact {i}") for i in range(10)])
    assert len(store.recall("limit")) == 5  # default limit
    assert len(store.recall("limit", limit=3)) == 3
    assert len(store.recall("nothing matches", limit=7)) == 7
    assert len(store.recall("limit", limit=50)) == 10
    assert store.recall("limit", limit=0) == []
    assert store.recall("", limit=0) == []


@pytest.mark.parametrize("query", ["!!!", "", "   ", "?? -- ..", "\n\t"])
def test_query_without_words_is_recency_only(store: FactStore, query: str) -> None:
    first = store.store_fact(fact("first"))
    second = store.store_fact(fact("second"))
    third = store.store_fact(fact("third"))
    found = store.recall(query)
    assert ids(found) == [third, second, first]
    assert all(f.score == 0.0 for f in found)


# ---------------------------------------------------------------- filters


def test_namespaces_are_isolated(store: FactStore) -> None:
    mine = store.store_fact(fact("shared word in team a"), namespace="team/a")
    other = store.store_fact(fact("shared word in team b"), namespace="team/b")
    default = store.store_fact(fact("shared word by default"))
    assert ids(store.recall("shared word", namespace="team/a")) == [mine]
    assert ids(store.recall("shared word", namespace="team/b")) == [other]
    assert ids(store.recall("shared word")) == [default]
    assert ids(store.list(namespace="team/a")) == [mine]
    assert ids(store.list()) == [default]
    assert ids(store.list(namespace="project/facts")) == [default]
    assert store.recall("shared", namespace="team/c") == []
    assert store.list(namespace="team/a")[0].namespace == "team/a"


def test_min_confidence_filters_inclusively(store: FactStore) -> None:
    low = store.store_fact(fact("confidence low", confidence=0.3))
    mid = store.store_fact(fact("confidence mid", confidence=0.6))
    high = store.store_fact(fact("confidence high", confidence=0.9))
    assert set(ids(store.recall("confidence", limit=10))) == {low, mid, high}
    assert set(ids(store.recall("confidence", min_confidence=0.6, limit=10))) == {mid, high}
    assert ids(store.recall("unrelated", min_confidence=0.95)) == []
    # the recency fill obeys the filter too
    assert set(ids(store.recall("", min_confidence=0.6))) == {mid, high}


def test_kinds_filter_one_or_many_normalized(store: FactStore) -> None:
    note = store.store_fact({"kind": "Design-Note", "claim": "kinds alpha", "confidence": 0.9})
    decision = store.store_fact({"kind": "decision", "claim": "kinds beta", "confidence": 0.9})
    constraint = store.store_fact({"kind": "CONSTRAINT", "claim": "kinds gamma", "confidence": 0.9})
    assert ids(store.recall("kinds", kinds="Design-Note")) == [note]
    assert ids(store.recall("kinds", kinds="design_note")) == [note]
    assert ids(store.recall("kinds", kinds="design-note")) == [note]
    assert set(ids(store.recall("kinds", kinds=["decision", "Constraint"]))) == {
        decision,
        constraint,
    }
    assert set(ids(store.recall("kinds", kinds=("DECISION",)))) == {decision}
    assert store.recall("kinds", kinds="unknown_kind") == []
    # the recency fill obeys the filter too
    assert ids(store.recall("", kinds="decision")) == [decision]


# ---------------------------------------------------------------- FTS5-safe queries

SPECIALS = [
    '"',
    '""',
    "*",
    "NEAR",
    "NEAR(",
    "-",
    "a - b",
    "AND",
    "OR",
    "NOT",
    "^",
    ":",
    "col:term",
    "(",
    ")",
    "{",
    "}",
    '"unbalanced',
    'unbalanced" quote "',
    "'",
    "it's",
    "sqlite*",
    "-sqlite",
    "^sqlite",
    "claim:sqlite",
    "{claim kind}: sqlite",
    "NEAR(sqlite facts, 2)",
    "+",
    "\x00",
    "%_",
    "\\",
    "[]",
]


@pytest.fixture
def special_store() -> Iterator[tuple[FactStore, dict[str, str]]]:
    s = FactStore(":memory:")
    named = {
        "sqlite": s.store_fact(fact("SQLite stores the facts")),
        "term": s.store_fact(fact("term limits apply to sessions")),
        "and": s.store_fact(fact("tabs and spaces are not mixed or swapped")),
        "near": s.store_fact(fact("the cache lives near the database")),
    }
    s.store_facts([fact(f"unrelated filler {i}") for i in range(5)])
    yield s, named
    s.close()


@pytest.mark.parametrize("special", SPECIALS)
def test_fts_syntax_never_raises_and_words_are_found(
    special_store: tuple[FactStore, dict[str, str]], special: str
) -> None:
    s, named = special_store
    alone = s.recall(special)
    assert len(alone) <= 5
    assert all(isinstance(f, Fact) and f.score >= 0 for f in alone)
    found = s.recall(f"{special} sqlite {special}")
    assert found[0].id == named["sqlite"]
    assert found[0].score > 0


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("col:term", "term"),
        ("NEAR", "near"),
        ("NEAR(", "near"),
        ("AND", "and"),
        ("OR", "and"),
        ("NOT", "and"),
        ('"tabs', "and"),
        ("tabs*", "and"),
        ("(tabs)", "and"),
        ("{tabs}", "and"),
        ("^tabs", "and"),
        ("-tabs", "and"),
        ("Sqlite's", "sqlite"),
    ],
)
def test_operator_words_are_plain_words(
    special_store: tuple[FactStore, dict[str, str]], query: str, name: str
) -> None:
    s, named = special_store
    found = s.recall(query)
    assert found[0].id == named[name]
    assert found[0].score > 0


def test_very_long_queries(special_store: tuple[FactStore, dict[str, str]]) -> None:
    s, named = special_store
    long_distinct = "sqlite " + " ".join(f"word{i}" for i in range(999))
    found = s.recall(long_distinct)
    assert found[0].id == named["sqlite"]
    assert found[0].score > 0
    repeated = " ".join(["sqlite"] * 1000)
    assert s.recall(repeated)[0].id == named["sqlite"]
    noisy = " ".join(['"(*NEAR:^-' for _ in range(1000)])
    assert len(s.recall(noisy)) == 5
    huge = "x" * 100_000
    assert len(s.recall(huge, limit=3)) == 3


@pytest.mark.parametrize(
    ("claim", "query"),
    [
        ("Meet at the café on Fridays", "cafe"),
        ("Meet at the cafe on Fridays", "café"),
        ("Meet at the CAFÉ on Fridays", "Café"),
        ("Die Straße ist naïve über alles", "uber"),
        ("Die Straße ist naive uber alles", "naïve"),
        ("日本語 のテキスト", "日本語"),
    ],
)
def test_unicode_and_diacritics(store: FactStore, claim: str, query: str) -> None:
    target = store.store_fact(fact(claim))
    store.store_fact(fact("something newer and unrelated"))
    found = store.recall(query)
    assert found[0].id == target
    assert found[0].score > 0
    assert found[0].claim == claim


@pytest.mark.parametrize("query", ["🙂", "\u0301", "é" * 500, "ﬁ ligature", "Ω≈ç√∫", "\u200b"])
def test_odd_unicode_queries_never_raise(store: FactStore, query: str) -> None:
    store.store_fact(fact("plain"))
    assert len(store.recall(query)) == 1


def test_queries_are_parameterized(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    nasty = "'; DROP TABLE facts; --"
    with FactStore(path) as s:
        other = s.store_fact(fact("an innocent neighbour"))
        fid = s.store_fact(fact(nasty, tags=["'); DELETE FROM facts; --"]))
        found = s.recall(nasty)
        assert found[0].id == fid
        assert found[0].claim == nasty
        assert found[0].tags == ("'); DELETE FROM facts; --",)
        assert found[0].score > 0
        s.recall("x' OR '1'='1", kinds="note' OR '1'='1", namespace="a'; DROP TABLE facts; --")
        assert set(ids(s.list())) == {other, fid}
        third = s.store_fact(fact("table still works"))
        assert s.recall("works")[0].id == third
    with FactStore(path) as s:
        assert len(s.list()) == 3
        assert s.list()[-1].claim == "an innocent neighbour"


@pytest.fixture(scope="module")
def property_store() -> Iterator[FactStore]:
    s = FactStore(":memory:")
    s.store_facts(
        [
            fact("SQLite stores the facts", tags=["db"]),
            fact("café near the NEAR operator AND more"),
            fact('quote " and star * and caret ^ and colon :'),
            fact("tabs and spaces"),
            fact("日本語 テキスト"),
            fact("(parentheses) {braces} - minus"),
            fact("ordinary words only"),
        ]
    )
    yield s
    s.close()


FTS_ALPHABET = "\"*^:()-{}+ NEARANDORNOTcolumnsqlitecafé'\\"


@settings(max_examples=300, deadline=None)
@given(
    query=st.one_of(st.text(max_size=200), st.text(alphabet=FTS_ALPHABET, max_size=60)),
    limit=st.integers(min_value=0, max_value=10),
)
def test_recall_of_any_text_never_raises(property_store: FactStore, query: str, limit: int) -> None:
    found = property_store.recall(query, limit=limit)
    assert isinstance(found, list)
    assert len(found) <= limit
    assert len(found) == min(limit, 7)
    assert all(isinstance(f, Fact) and f.score >= 0 for f in found)
    assert len({f.id for f in found}) == len(found)


# ---------------------------------------------------------------- delete, close, context


def test_delete_once_then_false(store: FactStore) -> None:
    fid = store.store_fact(fact("to be deleted"))
    keep = store.store_fact(fact("to be kept"))
    assert store.delete(fid) is True
    assert store.delete(fid) is False
    assert store.delete("no-such-id") is False
    assert ids(store.list()) == [keep]
    assert fid not in ids(store.recall("deleted", limit=10))


def test_delete_removes_the_fact_from_the_fts_index(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    with FactStore(path) as s:
        gone = s.store_fact(
            fact(
                "zanzibar is the codename",
                evidence=[{"kind": "ticket", "ref": "quixotic-42"}],
                tags=["marmalade"],
            )
        )
        s.store_fact(fact("an older survivor"))
        assert s.recall("zanzibar")[0].id == gone
        assert s.recall("quixotic")[0].id == gone  # evidence words are indexed
        assert s.recall("marmalade")[0].id == gone  # tags are indexed
        assert s.delete(gone) is True
        # the freed rowid may be reused: a new fact must not inherit the old index entries
        newest = s.store_fact(fact("a brand new fact"))
        for word in ("zanzibar", "quixotic", "marmalade", "codename"):
            found = s.recall(word)
            assert gone not in ids(found)
            assert all(f.score == 0.0 for f in found), word
            assert found[0].id == newest
        raw = sqlite3.connect(path)
        try:
            hits = raw.execute(
                "SELECT rowid FROM facts_fts WHERE facts_fts MATCH 'zanzibar OR quixotic'"
            ).fetchall()
        finally:
            raw.close()
        assert hits == []


def test_close_is_idempotent_and_context_manager_closes(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    s = FactStore(path)
    s.store_fact(fact("closing time"))
    s.close()
    s.close()
    with FactStore(path) as again:
        assert isinstance(again, FactStore)
        assert [f.claim for f in again.list()] == ["closing time"]
        again.store_fact(fact("second"))
    with pytest.raises(sqlite3.ProgrammingError):
        again.list()
    again.close()
    with FactStore(path, create=False) as third:
        assert [f.claim for f in third.list()] == ["second", "closing time"]


# ---------------------------------------------------------------- large-store term selection


def test_large_store_ignores_a_term_found_everywhere(tmp_path: Path) -> None:
    with FactStore(tmp_path / "large.db") as s:
        batch = []
        for i in range(2_500):
            extra = " rareword" if i in (10, 1_200, 2_400) else ""
            batch.append(fact(f"commonword item {i} note{i % 97}{extra}"))
        new = s.store_facts(batch)
        rare_ids = {new[10], new[1_200], new[2_400]}
        found = s.recall("commonword rareword")
        assert len(found) == 5
        assert set(ids(found[:3])) == rare_ids
        assert all(f.score > 0 for f in found[:3])
        # rareword alone finds the same three
        assert set(ids(s.recall("rareword", limit=3))) == rare_ids
        # a query of only the everywhere-term still answers with `limit` facts
        assert len(s.recall("commonword", limit=4)) == 4


# ---------------------------------------------------------------- files and durability


def test_path_creates_parent_directories_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "facts.db"
    with FactStore(path) as s:
        fid = s.store_fact(fact("durable claim", tags=["t"]))
        original = s.list()
    assert path.is_file()
    with FactStore(str(path)) as s:
        assert s.list() == original
        assert s.recall("durable")[0].id == fid


def test_create_false_on_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "facts.db"
    with pytest.raises(FactError) as info:
        FactStore(path, create=False)
    assert str(path) in str(info.value)
    assert not path.exists()
    assert not path.parent.exists()


def test_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    data = b"definitely not sqlite\x00" + os.urandom(8_192)
    path.write_bytes(data)
    for create in (True, False):
        with pytest.raises(FactError) as info:
            FactStore(path, create=create)
        assert str(path) in str(info.value)
    assert path.read_bytes() == data  # never a silent reset


def test_sqlite_database_of_something_else(tmp_path: Path) -> None:
    path = tmp_path / "users.db"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    raw.execute("INSERT INTO users (name) VALUES ('ada')")
    raw.commit()
    raw.close()
    for create in (True, False):
        with pytest.raises(FactError) as info:
            FactStore(path, create=create)
        assert str(path) in str(info.value)
    raw = sqlite3.connect(path)
    try:
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == {"users"}
        assert raw.execute("SELECT name FROM users").fetchall() == [("ada",)]
    finally:
        raw.close()


def test_store_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    with FactStore(path) as s:
        s.store_fact(fact("wal please"))
        assert s._db.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    finally:
        raw.close()


# ---------------------------------------------------------------- concurrency

WRITER = """
import sys, time
from pathlib import Path
from agent_reminders.facts import FactStore

path, tag, ready, go = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
store = FactStore(path, create=False)
ready.touch()
deadline = time.monotonic() + 60
while not go.exists():
    if time.monotonic() > deadline:
        sys.exit("never told to go")
    time.sleep(0.001)
for i in range(300):
    store.store_fact({"kind": "note", "claim": f"writer {tag} fact {i}", "confidence": 0.5})
store.close()
"""


def test_two_writer_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "facts.db"
    FactStore(path).close()
    go = tmp_path / "go"
    src = str(Path(agent_reminders.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    procs = []
    readies = []
    for tag in ("a", "b"):
        ready = tmp_path / f"ready-{tag}"
        readies.append(ready)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(path), tag, str(ready), str(go)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=tmp_path,
            )
        )
    try:
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in readies):
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            assert time.monotonic() < deadline
            time.sleep(0.005)
        go.touch()
        for p in procs:
            _out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err.decode()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    expected = {f"writer {tag} fact {i}" for tag in ("a", "b") for i in range(300)}
    with FactStore(path, create=False) as s:
        listed = s.list()
        assert len(listed) == 600
        assert {f.claim for f in listed} == expected
        assert len({f.id for f in listed}) == 600
        found = s.recall("writer b fact 299")
        assert found[0].claim == "writer b fact 299"
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        raw.close()


def test_two_threads_share_one_store(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    errors: list[BaseException] = []
    with FactStore(path) as s:
        barrier = threading.Barrier(2)

        def work(tag: str) -> None:
            try:
                barrier.wait()
                for i in range(200):
                    s.store_fact(fact(f"thread {tag} fact {i}"))
                    if i % 20 == 0:
                        assert len(s.recall(f"thread {tag}", limit=3)) <= 3
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in ("x", "y")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
        listed = s.list()
        assert len(listed) == 400
        assert {f.claim for f in listed} == {
            f"thread {t} fact {i}" for t in ("x", "y") for i in range(200)
        }
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("schema", "other.v9", "holds schema 'other.v9', not 'fact.v1'"),
        ("version", "999", "newer agent-reminders (schema version 999); upgrade"),
    ],
)
def test_a_store_of_another_schema_or_a_newer_version_is_refused_unchanged(
    tmp_path: Path, key: str, value: str, message: str
) -> None:
    path = tmp_path / "facts.db"
    FactStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    db.close()
    before = path.read_bytes()
    with pytest.raises(FactError) as raised:
        FactStore(path, create=False)
    assert str(path) in str(raised.value)
    assert message in str(raised.value)
    assert path.read_bytes() == before
