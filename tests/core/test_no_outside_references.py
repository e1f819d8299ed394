"""The code and the docs speak for themselves: no reference to a specification kept outside
this repository ("spec 04 §3", "01 §7", "§5", "(07)", "the spec") — a maintainer could not
follow it. A rule the code relies on is stated where it is used, or in docs/*.md, which the
docstrings point to ("see docs/protocol.md, 'Limits'")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "agent_reminders"


# What a reference to the outside specification looks like. Python's own "spec" words
# (importlib.util.spec_from_file_location, ModuleSpec, spec= arguments), ProviderSpec,
# parse_model_spec and a "model spec" argument carry no section number and do not match.
OUTSIDE_REFERENCE = re.compile(
    r"""
      (?<!RFC\ \d{4}\ )§            # a section sign, except after a public RFC number
    | \bspecs?\s+0?\d\b             # "spec 04", "spec 6", "specs 01"
    | \bspec(?:ification)?'s\b      # "the spec's methods"
    | \bthe\ spec(?:ification)?\b   # "the spec", "the specification"
    | \bspec\ (?:order|defaults?|table|says)\b
    | \b0[1-8]-(?:core|session-loop|generators|bridge|adapters|storage|tools|channels)\b
    | \(0[1-8](?:,|\)|\ and\b)      # "(07)", "(04, 07)", "(02 and 03)"
    | \b0[1-8]\ §                   # "04 §3" (also caught by the first branch)
    """,
    re.IGNORECASE | re.VERBOSE,
)


def outside_references(path: Path) -> list[str]:
    """``file:line: text`` of every outside reference in ``path``."""
    hits = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if OUTSIDE_REFERENCE.search(line):
            hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return hits


def test_no_outside_references_in_src() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 50
    hits = [hit for path in files for hit in outside_references(path)]
    assert not hits, "references to a document outside the repository:\n" + "\n".join(hits)


def test_no_outside_references_in_the_docs() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    hits = [hit for path in pages for hit in outside_references(path)]
    assert not hits, "references to a document outside the repository:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    "text",
    [
        '"""The seam table (spec 02 §4): which delivery modes each loop seam drains."""',
        "# the pending rows of 04 §3, FIFO",
        "the append-only commit (§6)",
        "its timeline and its audit (07).",
        "the JSON-RPC bridge over stdio (spec 04, 07)",
        "    # -- the spec's methods -----",
        "see the spec order",
        "with the spec defaults filled in",
        "Contract: spec 02-session-loop",
        "Contract: 01-core §10",
        "Spec 06 §4: recall is sorted",
    ],
)
def test_the_check_finds_references(text: str) -> None:
    assert OUTSIDE_REFERENCE.search(text), text


@pytest.mark.parametrize(
    "text",
    [
        "spec = importlib.util.spec_from_file_location(name, path)",
        "assert isinstance(module.__spec__, ModuleSpec)",
        "mock.patch.object(obj, 'run', spec=True)",
        "for spec in CANONICAL_PROVIDERS:",
        "def config_problems(spec: ProviderSpec, config) -> list[str]:",
        'raise ConfigError(f"model spec {spec!r} is not PREFIX:NAME")',
        "model = parse_model_spec(options.model)",
        "the timestamp is advanced by one millisecond, as RFC 9562 §6.2 allows",
        "ranked above user messages (the chain of command of OpenAI's published Model Spec)",
        "_COMMON_FRACTION = 0.05",
        "SAVE_PAUSE_SECONDS = (0.05, 1.0)",
        '"evidence": [{"kind": "chat", "ref": "2025-11-03"}],',
        "## 1.4.0 (2025-10-02)",
        "a tool spec (a name, a description, parameters)",
    ],
)
def test_the_check_leaves_other_words_alone(text: str) -> None:
    assert not OUTSIDE_REFERENCE.search(text), text
