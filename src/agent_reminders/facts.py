"""Project facts: a SQLite fact store with an FTS5 index ranked by ``bm25()`` (docs/facts.md).

Example:
    >>> store = FactStore(":memory:")
    >>> fid = store.store_fact({"kind": "decision", "claim": "Use PostgreSQL for storage.",
    ...                         "confidence": 0.9, "evidence": [{"kind": "adr", "ref": "ADR-7"}]})
    >>> [f.claim for f in store.recall("which database storage?")]
    ['Use PostgreSQL for storage.']
    >>> store.close()
"""

from __future__ import annotations

import builtins
import contextlib
import json
import math
import os
import re
import threading
import time
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

from ._core.errors import FactError
from ._core.ids import new_id

__all__ = [
    "DEFAULT_NAMESPACE",
    "Fact",
    "FactError",
    "FactStore",
    "SCHEMA",
    "normalize_kind",
]

SCHEMA = "fact.v1"
SCHEMA_VERSION = 1
DEFAULT_NAMESPACE = "project/facts"
_FACT_KEYS = frozenset({"kind", "claim", "confidence", "evidence", "tags"})
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_QUERY_TERMS = 32
_CANDIDATES = 50  # at least this many BM25 candidates are re-ranked by matched terms
_SMALL_STORE = 2_000  # up to this many facts, every query term is used
_COMMON_FRACTION = 0.05  # in larger stores, terms in more facts than this are too common


def _words_sql(column: str, item: str) -> str:
    return f"(SELECT coalesce(group_concat({item}, ' '), '') FROM json_each({column}))"


_DDL: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS facts (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        kind TEXT NOT NULL,
        claim TEXT NOT NULL,
        confidence REAL NOT NULL,
        evidence TEXT NOT NULL,
        tags TEXT NOT NULL,
        stored_at REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS facts_by_namespace ON facts (namespace, rowid)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5 (
        claim, kind, tags, evidence, content = 'facts', content_rowid = 'rowid'
    )""",
    "CREATE VIRTUAL TABLE IF NOT EXISTS facts_vocab USING fts5vocab (facts_fts, 'row')",
    # The index holds the words of tags and evidence, not their JSON keys and punctuation;
    # the delete trigger passes exactly the same text, as external-content tables require.
    f"""CREATE TRIGGER IF NOT EXISTS facts_ai AFTER INSERT ON facts BEGIN
        INSERT INTO facts_fts (rowid, claim, kind, tags, evidence)
        VALUES (new.rowid, new.claim, new.kind, {_words_sql("new.tags", "value")},
                {
        _words_sql(
            "new.evidence", "json_extract(value, '$.kind') || ' ' || json_extract(value, '$.ref')"
        )
    });
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS facts_ad AFTER DELETE ON facts BEGIN
        INSERT INTO facts_fts (facts_fts, rowid, claim, kind, tags, evidence)
        VALUES ('delete', old.rowid, old.claim, old.kind, {_words_sql("old.tags", "value")},
                {
        _words_sql(
            "old.evidence", "json_extract(value, '$.kind') || ' ' || json_extract(value, '$.ref')"
        )
    });
    END""",
)


@dataclass(frozen=True, slots=True)
class Fact:
    """A stored fact; ``score`` >= 0, higher is a better match (0 for facts that only fill)."""

    id: str
    kind: str
    claim: str
    confidence: float
    evidence: tuple[dict[str, str], ...]
    tags: tuple[str, ...]
    namespace: str
    stored_at: float
    score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The fact as JSON-ready data (``schema: "fact.v1"``)."""
        return {
            "schema": SCHEMA,
            "id": self.id,
            "kind": self.kind,
            "claim": self.claim,
            "confidence": self.confidence,
            "evidence": [dict(e) for e in self.evidence],
            "tags": list(self.tags),
            "namespace": self.namespace,
            "stored_at": self.stored_at,
            "score": self.score,
        }


def normalize_kind(kind: str) -> str:
    """Lower-case a kind, turning ``-`` into ``_`` (``"Design-Note"`` → ``"design_note"``)."""
    return kind.strip().lower().replace("-", "_")


def _encodable(text: str, field: str) -> str:
    # SQLite stores UTF-8; a lone surrogate ("\ud800") cannot be encoded and would surface as
    # a raw UnicodeEncodeError from deep inside sqlite3.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FactError(
            f"{field} is not valid Unicode text (lone surrogate {text[exc.start]!r} at index "
            f"{exc.start}); got {text!r}"
        ) from None
    return text


def _check_namespace(namespace: object) -> str:
    if not isinstance(namespace, str) or not namespace.strip():
        raise FactError(f"namespace must be a non-blank string; got {namespace!r}")
    return _encodable(namespace, "namespace").strip()


def _validate(fact: object) -> tuple[str, str, float, list[dict[str, str]], list[str]]:
    if not isinstance(fact, Mapping):
        raise FactError(f"a fact must be a mapping; got {type(fact).__name__}")
    unknown = sorted(str(k) for k in fact if k not in _FACT_KEYS and k != "schema")
    if unknown:
        raise FactError(f"unknown fact field(s): {', '.join(unknown)}")
    if fact.get("schema", SCHEMA) != SCHEMA:
        raise FactError(f"schema must be {SCHEMA!r}; got {fact.get('schema')!r}")
    kind, claim = fact.get("kind"), fact.get("claim")
    if not isinstance(kind, str) or not kind.strip():
        raise FactError(f"kind must be a non-blank string; got {kind!r}")
    if not isinstance(claim, str) or not claim.strip():
        raise FactError(f"claim must be a non-blank string; got {claim!r}")
    _encodable(kind, "kind")
    _encodable(claim, "claim")
    confidence = fact.get("confidence")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
        or not 0 <= confidence <= 1
    ):
        raise FactError(f"confidence must be a number in [0, 1]; got {confidence!r}")
    evidence = fact.get("evidence", [])
    if not isinstance(evidence, list | tuple):
        raise FactError(f"evidence must be a list of {{kind, ref}} objects; got {evidence!r}")
    checked: list[dict[str, str]] = []
    for i, item in enumerate(evidence):
        if not isinstance(item, Mapping) or set(item) != {"kind", "ref"}:
            raise FactError(f"evidence[{i}] must be an object with exactly 'kind' and 'ref'")
        if not all(isinstance(item[k], str) and item[k].strip() for k in ("kind", "ref")):
            raise FactError(f"evidence[{i}].kind and .ref must be non-blank strings")
        for key in ("kind", "ref"):
            _encodable(item[key], f"evidence[{i}].{key}")
        checked.append({"kind": item["kind"], "ref": item["ref"]})
    tags = fact.get("tags", [])
    if tags is None:
        tags = []
    if not isinstance(tags, list | tuple) or not all(
        isinstance(t, str) and t.strip() for t in tags
    ):
        raise FactError(f"tags must be a list of non-blank strings; got {tags!r}")
    for i, tag in enumerate(tags):
        _encodable(tag, f"tags[{i}]")
    return (
        normalize_kind(kind),
        claim.strip(),
        float(confidence),
        checked,
        list(dict.fromkeys(t.strip() for t in tags)),
    )


def _fold(word: str) -> str:
    # FTS5's unicode61 tokenizer folds case and strips diacritics; do the same to query words.
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def query_terms(text: str) -> builtins.list[str]:
    """The distinct folded words of any text (at most 32), in order."""
    words = (_fold(w) for w in _WORD.findall(text))
    return builtins.list(dict.fromkeys(w for w in words if w))[:_MAX_QUERY_TERMS]


def _row(
    fields: tuple[str, str, float, builtins.list[dict[str, str]], builtins.list[str]], ns: str
) -> tuple[Any, ...]:
    kind, claim, confidence, evidence, tags = fields
    return (new_id(), ns, kind, claim, confidence, json.dumps(evidence), json.dumps(tags))


def fts_query(terms: builtins.list[str]) -> str:
    """A safe FTS5 query: each word quoted, joined by ``OR``.

    FTS5 syntax in user text (``"``, ``*``, ``NEAR``, ``-``, ``:``, parentheses) has already
    become plain words in :func:`query_terms`, so no query can raise.
    """
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in terms)


def _rank(rows: builtins.list[tuple[Any, ...]], terms: set[str], limit: int) -> builtins.list[Fact]:
    """The best ``limit`` matches: more distinct query terms first, then BM25, then newest.

    BM25 is compared at four decimals: in a small store every common term gets the minimum
    IDF, and length noise at the sixth decimal must not beat recency. The reported score is
    ``matched terms + bm25 / (1 + bm25)``, so it falls (or stays) down the list. Each row's
    JSON is read once, and only the facts returned are built.
    """
    scored = []
    for row in rows:
        evidence, tags = json.loads(row[4]), json.loads(row[5])
        cited = " ".join(f"{e['kind']} {e['ref']}" for e in evidence)
        text = " ".join((row[1], row[2], cited, " ".join(tags)))
        matched = len(terms & {_fold(w) for w in _WORD.findall(text)})
        bm25 = max(0.0, round(float(row[8]), 4))
        scored.append((-matched, -bm25, -row[9], matched + bm25 / (1 + bm25), row, evidence, tags))
    scored.sort(key=lambda item: item[:3])
    return [
        _fact((*row[:8], score), matched=True, evidence=evidence, tags=tags)
        for _, _, _, score, row, evidence, tags in scored[:limit]
    ]


class FactStore:
    """Facts in a SQLite file (WAL, busy timeout), searchable with BM25.

    Safe for several threads and several processes writing one file. ``path`` is a ``str`` or
    an ``os.PathLike`` and may be ``":memory:"``. ``create=False`` opens an existing store only
    (``FactError`` otherwise).

    A store whose file (or folder) cannot be written — a read-only checkout, a read-only mount —
    is opened read-only (``read_only`` is then ``True``): ``recall`` and ``list`` work, writes
    raise ``FactError``. It is opened with SQLite's ``mode=ro`` and, when even that needs a
    file it may not create (WAL's shared-memory file), with ``immutable=1``, which reads the
    main database file only (anything left in an un-checkpointed WAL is not seen).
    ``open_mode`` says which: ``"rw"``, ``"mode=ro"`` or ``"mode=ro&immutable=1"``.

    Raises:
        FactError: ``path`` is not a path, is a directory, is not a fact store (a foreign or
            corrupt file) or cannot be read; the message names the file.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, busy_timeout_ms: int = 10_000
    ) -> None:
        self.path = _check_path(path)
        memory = self.path == ":memory:"
        file = Path(self.path)
        if not memory:
            if file.is_dir():
                raise FactError(f"{self.path} is a directory, not a fact store file")
            if not create and not file.is_file():
                raise FactError(f"no fact store at {self.path}")
            if create and not file.exists():
                try:
                    file.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise FactError(
                        f"cannot create the folder of fact store {self.path}: {exc.strerror or exc}"
                    ) from None
        self.read_only: bool = not memory and file.exists() and not _writable(file)
        import sqlite3  # here, not at module level: `import agent_reminders` stays light

        self._lock = threading.RLock()
        self._timeout = busy_timeout_ms
        modes: tuple[str | None, ...] = ("mode=ro", "mode=ro&immutable=1")
        if not self.read_only:
            modes = (None,)
        for attempt, mode in enumerate(modes):
            try:
                self._db = self._connect(mode)
            except sqlite3.OperationalError as exc:
                if attempt + 1 < len(modes):
                    continue  # mode=ro could not open the file: read it immutable
                raise FactError(f"cannot open fact store {self.path}: {exc}") from None
            except sqlite3.Error as exc:
                raise FactError(f"cannot open fact store {self.path}: {exc}") from None
            try:
                self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
                self._migrate(wal=not memory and not self.read_only)
            except sqlite3.OperationalError as exc:
                self._db.close()
                if attempt + 1 < len(modes):
                    continue  # mode=ro could not open the WAL index: read the file immutable
                raise FactError(f"cannot read fact store {self.path}: {exc}") from None
            except sqlite3.DatabaseError as exc:
                self._db.close()
                raise FactError(f"{self.path} is not a usable fact store: {exc}") from None
            except FactError:
                self._db.close()
                raise
            self.open_mode = mode or "rw"
            break

    def _connect(self, mode: str | None) -> sqlite3.Connection:
        import sqlite3

        target, uri = self.path, False
        if mode is not None:
            target, uri = f"{Path(self.path).resolve().as_uri()}?{mode}", True
        return sqlite3.connect(
            target,
            timeout=self._timeout / 1000,
            check_same_thread=False,
            isolation_level=None,
            uri=uri,
        )

    def _migrate(self, *, wal: bool) -> None:
        """Check the file is a fact store (or empty), then switch to WAL and create the schema.

        WAL is switched on only after the checks: it rewrites the file header, and a foreign
        database must be left byte for byte as it was.
        """
        db = self._db
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "meta" not in tables:
            raise FactError(
                f"{self.path} is a SQLite database of something else (tables: "
                f"{', '.join(sorted(tables))}), not an agent-reminders fact store"
            )
        if "meta" in tables:
            meta = dict(
                db.execute("SELECT key, value FROM meta WHERE key IN ('schema', 'version')")
            )
            if meta.get("schema") != SCHEMA:
                raise FactError(f"{self.path} holds schema {meta.get('schema')!r}, not {SCHEMA!r}")
            version = meta.get("version")
            if version is None or int(version) > SCHEMA_VERSION:
                raise FactError(
                    f"{self.path} was written by a newer agent-reminders (schema version "
                    f"{version}); upgrade to read it"
                )
            self._journal(wal)
            return
        if self.read_only:
            raise FactError(
                f"{self.path} is read-only and holds no fact store yet; nothing can be created "
                "there"
            )
        self._journal(wal)
        with self._write():
            for statement in _DDL:
                db.execute(statement)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA,))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (str(SCHEMA_VERSION),))

    def _journal(self, wal: bool) -> None:
        if wal:
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")

    def _write(self) -> _Transaction:
        if self.read_only:
            raise FactError(
                f"fact store {self.path} is read-only (the file or its folder is not writable); "
                "it can be searched but not changed"
            )
        return _Transaction(self._db, self._lock)

    # -- writing ----------------------------------------------------------------------------

    def store_fact(self, fact: Mapping[str, Any], *, namespace: str = DEFAULT_NAMESPACE) -> str:
        """Validate and store one fact (schema ``fact.v1``); returns its new id.

        Raises:
            FactError: naming the bad field; nothing is stored.
        """
        fields = _validate(fact)
        return self._insert([_row(fields, _check_namespace(namespace))])[0]

    def store_facts(
        self, facts: Iterable[Mapping[str, Any]], *, namespace: str = DEFAULT_NAMESPACE
    ) -> builtins.list[str]:
        """Store many facts in one transaction; all are validated first, so one bad fact
        stores none (the error names its index and field)."""
        ns = _check_namespace(namespace)
        rows = []
        for index, fact in enumerate(facts):
            try:
                rows.append(_row(_validate(fact), ns))
            except FactError as exc:
                raise FactError(f"facts[{index}]: {exc}") from None
        return self._insert(rows)

    def _insert(self, rows: builtins.list[tuple[Any, ...]]) -> builtins.list[str]:
        now = time.time()
        with self._write():
            self._db.executemany(
                "INSERT INTO facts (id, namespace, kind, claim, confidence, evidence, tags, "
                "stored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(*row, now) for row in rows],
            )
        return [row[0] for row in rows]

    def delete(self, fact_id: str) -> bool:
        """Delete a fact by id; ``True`` only if it existed."""
        if not isinstance(fact_id, str):
            raise TypeError(f"fact_id must be a str, not {type(fact_id).__name__}")
        with self._write():
            cursor = self._db.execute("DELETE FROM facts WHERE id = ?", (fact_id,))
        return cursor.rowcount > 0

    # -- reading ----------------------------------------------------------------------------

    def list(self, *, namespace: str = DEFAULT_NAMESPACE) -> builtins.list[Fact]:
        """Every fact of a namespace, newest first."""
        ns = _check_namespace(namespace)
        with self._reading():
            rows = self._db.execute(
                f"SELECT {_COLUMNS}, 0 FROM facts WHERE namespace = ? ORDER BY rowid DESC", (ns,)
            ).fetchall()
        return [_fact(r) for r in rows]

    def recall(
        self,
        query: str,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        limit: int = 5,
        min_confidence: float = 0.0,
        kinds: str | Iterable[str] | None = None,
    ) -> builtins.list[Fact]:
        """Facts ranked by BM25 (best first), then newest; unmatched facts fill up by recency.

        Any text is a valid query. ``kinds`` is one kind or several, normalized like ``kind``.
        """
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, not {type(query).__name__}")
        ns = _check_namespace(namespace)
        if type(limit) is not int or limit < 0:
            raise FactError(f"limit must be an int >= 0; got {limit!r}")
        if isinstance(min_confidence, bool) or not isinstance(min_confidence, int | float):
            raise FactError(f"min_confidence must be a number; got {min_confidence!r}")
        if limit == 0:
            return []
        wanted = _kinds(kinds)
        where = "f.namespace = ? AND f.confidence >= ?"
        params: builtins.list[Any] = [ns, float(min_confidence)]
        if wanted is not None:
            where += f" AND f.kind IN ({', '.join('?' * len(wanted))})"
            params.extend(wanted)
        found: builtins.list[Fact] = []
        with self._reading():
            terms = self._selective(query_terms(query))
            if terms:
                rows = self._db.execute(
                    f"SELECT {_COLUMNS_F}, -bm25(facts_fts) AS score, f.rowid FROM facts_fts "
                    f"JOIN facts AS f ON f.rowid = facts_fts.rowid "
                    f"WHERE facts_fts MATCH ? AND {where} "
                    "ORDER BY bm25(facts_fts), f.rowid DESC LIMIT ?",
                    [fts_query(terms), *params, max(limit * 8, _CANDIDATES)],
                ).fetchall()
                found = _rank(rows, set(terms), limit)
            if len(found) < limit:
                seen = [f.id for f in found]
                exclude = f" AND f.id NOT IN ({', '.join('?' * len(seen))})" if seen else ""
                rows = self._db.execute(
                    f"SELECT {_COLUMNS_F}, 0 FROM facts AS f WHERE {where}{exclude} "
                    "ORDER BY f.rowid DESC LIMIT ?",
                    [*params, *seen, limit - len(found)],
                ).fetchall()
                found.extend(_fact(r) for r in rows)
        return found

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Hold the lock; a damaged file found while reading is a ``FactError`` naming it."""
        import sqlite3

        with self._lock:
            try:
                yield
            except sqlite3.ProgrammingError:  # a closed store is a usage error, not a bad file
                raise
            except sqlite3.DatabaseError as exc:
                raise FactError(f"cannot read fact store {self.path}: {exc}") from None

    def _selective(self, terms: builtins.list[str]) -> builtins.list[str]:
        """Drop query terms too common to rank by, once the store is large.

        A term found in more than 5% of a large store has almost no BM25 weight (its IDF is
        near zero) but makes FTS5 score every fact that holds it; leaving it out keeps recall
        in milliseconds at 100,000 facts. Terms that occur nowhere are dropped too. Small
        stores (up to 2,000 facts) keep every term.
        """
        if not terms:
            return terms
        size = self._db.execute("SELECT max(rowid) FROM facts").fetchone()[0] or 0
        if size <= _SMALL_STORE:
            return terms
        limit = max(_SMALL_STORE, int(size * _COMMON_FRACTION))
        kept = []
        for term in terms:
            row = self._db.execute("SELECT doc FROM facts_vocab WHERE term = ?", (term,)).fetchone()
            if row is not None and 0 < row[0] <= limit:
                kept.append(term)
        return kept

    def close(self) -> None:
        """Close the database connection (idempotent)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> FactStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` under the store's lock (rollback on error)."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock) -> None:
        self._db = db
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire()
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            self._lock.release()


def _check_path(path: object) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path.strip():
        raise FactError(
            f"a fact store path must be a non-blank str or os.PathLike; got {path!r} "
            f"({type(path).__name__})"
        )
    return path


def _writable(file: Path) -> bool:
    """Whether SQLite can write the store: the file and (for WAL's side files) its folder."""
    folder = file.resolve().parent
    return os.access(file, os.W_OK) and os.access(folder, os.W_OK)


_COLUMNS = "id, kind, claim, confidence, evidence, tags, namespace, stored_at"
_COLUMNS_F = ", ".join(f"f.{c.strip()}" for c in _COLUMNS.split(","))


def _kinds(kinds: str | Iterable[str] | None) -> list[str] | None:
    if kinds is None:
        return None
    items = [kinds] if isinstance(kinds, str) else list(kinds)
    if not all(isinstance(k, str) and k.strip() for k in items):
        raise FactError(f"kinds must be non-blank strings; got {kinds!r}")
    return list(dict.fromkeys(normalize_kind(k) for k in items)) or None


def _fact(
    row: tuple[Any, ...],
    *,
    matched: bool = False,
    evidence: builtins.list[dict[str, str]] | None = None,
    tags: builtins.list[str] | None = None,
) -> Fact:
    """A fact from its row; ``evidence`` and ``tags`` when the row's JSON was read already."""
    fid, kind, claim, confidence, evidence_json, tags_json, namespace, stored_at, score = row
    return Fact(
        id=fid,
        kind=kind,
        claim=claim,
        confidence=confidence,
        evidence=tuple(json.loads(evidence_json) if evidence is None else evidence),
        tags=tuple(json.loads(tags_json) if tags is None else tags),
        namespace=namespace,
        stored_at=stored_at,
        # a match always scores above the 0 of facts that only fill the list
        score=max(1e-6, round(float(score), 6)) if matched else 0.0,
    )
