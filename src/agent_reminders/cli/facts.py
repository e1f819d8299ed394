"""``agent-reminders facts``: add, search, list and delete project facts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..facts import DEFAULT_NAMESPACE, Fact, FactStore
from ..providers.project_facts import DEFAULT_PATH
from .common import emit_json, fail, handle_errors, is_terminal, safe_text

__all__ = ["facts_app"]

facts_app = typer.Typer(
    help="The project fact store (SQLite FTS5, ranked by BM25).", no_args_is_help=True
)

DbOption = Annotated[
    Path,
    typer.Option("--db", envvar="AGENT_REMINDERS_FACTS_DB", help="Fact store file."),
]
NamespaceOption = Annotated[str, typer.Option("--namespace", "-n", help="Fact namespace.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _open_existing(db: Path) -> FactStore:
    if db.is_dir():
        raise fail(
            f"{db} is a directory, not a fact store file (give the file, e.g. {db}/facts.db)"
        )
    if not db.is_file():
        raise fail(f"no fact store at {db} (add a fact first: agent-reminders facts add ...)")
    return FactStore(db, create=False)


def _evidence(items: list[str]) -> list[dict[str, str]]:
    out = []
    for item in items:
        kind, sep, ref = item.partition(":")
        if not sep or not kind.strip() or not ref.strip():
            raise ValueError(
                f"--evidence must look like KIND:REF (e.g. file:src/app.py); got {item!r}"
            )
        out.append({"kind": kind.strip(), "ref": ref.strip()})
    return out


def _show(facts: list[Fact], *, as_json: bool, scores: bool) -> None:
    if as_json:
        emit_json([f.to_dict() for f in facts])
        return
    terminal = is_terminal()
    if not facts:
        # A note for a person, not data: piped output stays empty (stderr carries the note).
        typer.echo("no facts", err=not terminal)
        return
    if not terminal:
        for f in facts:
            evidence = " ".join(f"{e['kind']}:{e['ref']}" for e in f.evidence)
            score = f"\t{f.score:.3f}" if scores else ""
            fields = (f.id, f.kind, f"{f.confidence:.2f}", f.claim, evidence)
            # one line per fact: tabs and line breaks inside a field become spaces
            typer.echo("\t".join(" ".join(x.split()) for x in fields) + score)
        return
    table = Table(show_lines=False)
    # an id is copied off the screen into facts delete: never wrapped, never cropped
    table.add_column("id", no_wrap=True, min_width=max(len(f.id) for f in facts))
    for column in ("kind", "conf.", "claim", "evidence", *(["score"] if scores else [])):
        table.add_column(column, overflow="fold")
    for f in facts:
        evidence = ", ".join(f"{e['kind']}:{e['ref']}" for e in f.evidence)
        row = [f.id, f.kind, f"{f.confidence:.2f}", f.claim, evidence]
        row += [f"{f.score:.3f}"] if scores else []
        # Text cells: stored "[bold]" or "[link=…]" is shown as typed, never as rich markup.
        table.add_row(*(Text(safe_text(cell)) for cell in row))
    Console().print(table)


@facts_app.command("add")
@handle_errors
def add(
    claim: Annotated[str, typer.Option("--claim", "-c", help="The fact, one sentence.")],
    kind: Annotated[str, typer.Option("--kind", "-k", help="decision, constraint, convention…")],
    confidence: Annotated[float, typer.Option("--confidence", help="0..1")] = 0.8,
    evidence: Annotated[
        list[str] | None, typer.Option("--evidence", "-e", help="KIND:REF, repeatable.")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Repeatable.")] = None,
    namespace: NamespaceOption = DEFAULT_NAMESPACE,
    db: DbOption = DEFAULT_PATH,
    as_json: JsonOption = False,
) -> None:
    """Store one fact and print its id."""
    fact = {
        "kind": kind,
        "claim": claim,
        "confidence": confidence,
        "evidence": _evidence(evidence or []),
        "tags": tag or [],
    }
    with FactStore(db) as store:
        fid = store.store_fact(fact, namespace=namespace)
    if as_json:
        emit_json({"id": fid, "namespace": namespace, "db": str(db)})
    else:
        typer.echo(fid)


@facts_app.command("search")
@handle_errors
def search(
    query: Annotated[str, typer.Argument(help="Any text; FTS5 syntax is treated as words.")],
    limit: Annotated[int, typer.Option("--limit", "-l", min=0, max=100)] = 5,
    min_confidence: Annotated[float, typer.Option("--min-confidence")] = 0.0,
    kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help="Repeatable.")] = None,
    namespace: NamespaceOption = DEFAULT_NAMESPACE,
    db: DbOption = DEFAULT_PATH,
    as_json: JsonOption = False,
) -> None:
    """Recall facts: best BM25 match first, then newest."""
    with _open_existing(db) as store:
        found = store.recall(
            query, namespace=namespace, limit=limit, min_confidence=min_confidence, kinds=kind
        )
    _show(found, as_json=as_json, scores=True)


@facts_app.command("list")
@handle_errors
def list_facts(
    namespace: NamespaceOption = DEFAULT_NAMESPACE,
    db: DbOption = DEFAULT_PATH,
    as_json: JsonOption = False,
) -> None:
    """List every fact of a namespace, newest first."""
    with _open_existing(db) as store:
        found = store.list(namespace=namespace)
    _show(found, as_json=as_json, scores=False)


@facts_app.command("delete")
@handle_errors
def delete(
    fact_id: Annotated[str, typer.Argument(help="The id printed by `facts add`.")],
    db: DbOption = DEFAULT_PATH,
) -> None:
    """Delete one fact by id."""
    with _open_existing(db) as store:
        if not store.delete(fact_id):
            raise fail(f"no fact with id {fact_id!r} in {db}")
    typer.echo(f"deleted {fact_id}")
