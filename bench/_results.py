"""Keep bench/results.md as one section per benchmark, each replaced by its own run."""

from __future__ import annotations

import argparse
import os
import platform
from collections.abc import Iterable, Sequence
from pathlib import Path

RESULTS = Path(__file__).with_name("results.md")
HEADER = "# Benchmark results\n\nEach section is rewritten by its benchmark (`make bench`).\n"


def session_args(doc: str) -> argparse.Namespace:
    """The options of a benchmark over a seeded session: ``--turns`` (200), ``--seed`` (7) and
    ``--json`` (print the figures only); ``doc``'s first line describes it."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures only")
    return parser.parse_args()


def machine() -> str:
    """CPU model, core count and Python version of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table: the first column left-aligned, the others (figures) right-aligned."""
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---:"] * len(header)) + "|",
        *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows),
    ]
    return "\n".join(lines)


def write_section(title: str, body: str, path: Path = RESULTS) -> None:
    """Replace (or append) the ``## title`` section of the results file."""
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    if not text.startswith("# "):
        text = HEADER
    sections = text.split("\n## ")
    head, rest = sections[0], sections[1:]
    new = f"{title}\n\n{body.strip()}\n"
    replaced = False
    for i, section in enumerate(rest):
        if section.split("\n", 1)[0].strip() == title:
            rest[i] = new
            replaced = True
    if not replaced:
        rest.append(new)
    path.write_text(
        "\n## ".join([head.rstrip() + "\n", *[r.rstrip() + "\n" for r in rest]]), encoding="utf-8"
    )
