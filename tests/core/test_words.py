"""The words of the docs and the code stay readable by a newcomer, checked three ways.

1. No reference to a document kept outside this repository ("spec 04 §3", "01 §7", "§5",
   "(07)", "the spec", "../shared/..."): a maintainer could not follow it. A rule the code
   relies on is stated where it is used, or in docs/*.md, which the docstrings name
   ("docs/protocol.md, 'Limits'"). A public standard is named without a section sign
   ("RFC 9562 allows it (section 6.2)").
2. Every relative link of README.md and docs/ reaches an existing file, and every ``#anchor``
   an id of the target page. The ids are the ones the docs site gets: each page is rendered
   by Python-Markdown with the extensions of mkdocs.yml, so a heading's id is what the ``toc``
   extension makes of it (``markdown.extensions.toc.slugify``, with ``_1``, ``_2`` for repeats)
   and an explicit ``{#id}`` is kept; a link inside code is not a link.
3. The glossary's words are introduced: on a docs page, the first use of an internal word of
   docs/glossary.md (outside code and headings) is a link to the glossary, or to the section
   the word's glossary entry links to, unless the page is the one that entry links to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache, lru_cache
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote

import markdown  # type: ignore[import-untyped]
import pytest
from markdown.extensions.toc import slugify  # type: ignore[import-untyped]
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GLOSSARY = DOCS / "glossary.md"
THIS = Path(__file__).resolve()

# ---------------------------------------------------------------- 1. outside references

# What a reference to an outside document looks like. Python's own "spec" words
# (importlib.util.spec_from_file_location, ModuleSpec, spec= arguments), ProviderSpec,
# parse_model_spec and a "model spec" argument carry no section number and do not match.
OUTSIDE_REFERENCE = re.compile(
    r"""
      §                             # a section sign, whatever it follows
    | \bspecs?\s+0?\d\b             # "spec 04", "spec 6", "specs 01"
    | \bspec(?:ification)?'s\b      # "the spec's methods"
    | \bthe\ spec(?:ification)?\b   # "the spec", "the specification"
    | \bspec\ (?:order|defaults?|table|says)\b
    | \b0[1-8]-(?:core|session-loop|generators|bridge|adapters|storage|tools|channels)\b
    | \(0[1-8](?:,|\)|\ and\b)      # "(07)", "(04, 07)", "(02 and 03)"
    | \.\./shared\b                 # a folder beside the repository
    """,
    re.IGNORECASE | re.VERBOSE,
)


def worded_files() -> list[Path]:
    """The files whose words are checked: the docs, the changelog, and every Python file of the
    library, the tests, the benchmarks and the examples — not the test data under
    tests/fixtures, and not this module, which spells the patterns out."""
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "ARCHITECTURE.md"]
    files += sorted(DOCS.rglob("*.md"))
    files += sorted((ROOT / "src").rglob("*.py"))
    files += [p for p in sorted((ROOT / "tests").rglob("*.py")) if "fixtures" not in p.parts]
    files += sorted((ROOT / "bench").glob("*.py")) + sorted((ROOT / "bench").glob("*.md"))
    files += sorted(p for p in (ROOT / "examples").rglob("*") if p.is_file())
    return [p for p in files if p.resolve() != THIS]


def outside_references(path: Path) -> list[str]:
    """``file:line: text`` of every outside reference in ``path``."""
    hits = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if OUTSIDE_REFERENCE.search(line):
            hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return hits


def test_no_references_to_documents_outside_the_repository() -> None:
    files = worded_files()
    assert len(files) > 300
    hits = [hit for path in files for hit in outside_references(path)]
    assert not hits, "references to a document outside the repository:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    "text",
    [
        '"""The seam table (spec 02 §4): which delivery modes each loop seam drains."""',
        "# the pending rows of 04 §3, FIFO",
        "the append-only commit (§6)",
        "the timestamp is advanced by one millisecond, as RFC 9562 §6.2 allows",
        "its timeline and its audit (07).",
        "the JSON-RPC bridge over stdio (spec 04, 07)",
        "    # -- the spec's methods -----",
        "see the spec order",
        "with the spec defaults filled in",
        "Contract: spec 02-session-loop",
        "Contract: 01-core §10",
        "Spec 06 §4: recall is sorted",
        "TIKTOKEN_CACHE_DIR=../shared/data/tiktoken python bench/nag.py",
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
        "the timestamp is advanced by one millisecond, as RFC 9562 allows (section 6.2)",
        "ranked above user messages (the chain of command of OpenAI's published Model Spec)",
        "_COMMON_FRACTION = 0.05",
        "SAVE_PAUSE_SECONDS = (0.05, 1.0)",
        '"evidence": [{"kind": "chat", "ref": "2025-11-03"}],',
        "## 1.4.0 (2025-10-02)",
        "a tool spec (a name, a description, parameters)",
        'see docs/session-loop.md, "Canonical providers"',
        "the shared store of ../data/shared.db",
    ],
)
def test_the_check_leaves_other_words_alone(text: str) -> None:
    assert not OUTSIDE_REFERENCE.search(text), text


# ---------------------------------------------------------------- rendering a page


@dataclass
class Rendered:
    """What a page is on the docs site: its element ids, its link targets in order, and its
    running text outside code and headings, cut where links start and end."""

    ids: set[str] = field(default_factory=set)
    hrefs: list[str] = field(default_factory=list)
    # (text, href of the link it is in or None, whether it is inline code)
    prose: list[tuple[str, str | None, bool]] = field(default_factory=list)


class _Reader(HTMLParser):
    SKIPPED: ClassVar[frozenset[str]] = frozenset(
        {"pre", "h1", "h2", "h3", "h4", "h5", "h6", "script", "style"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Rendered()
        self.skipping: list[str] = []
        self.links: list[str | None] = []
        self.code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.page.ids.add(str(found["id"]))
        if tag == "img" and found.get("src"):
            self.page.hrefs.append(str(found["src"]))
        if tag == "a":
            href = found.get("href")
            if href is not None:
                self.page.hrefs.append(href)
            self.links.append(href)
        if tag in self.SKIPPED:
            self.skipping.append(tag)
        if tag == "code":
            self.code += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self.code = max(0, self.code - 1)
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()
        if tag == "a" and self.links:
            self.links.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.page.prose.append((data, self.links[-1] if self.links else None, self.code > 0))


@lru_cache(maxsize=1)
def _site() -> MkDocsConfig:
    """mkdocs.yml as mkdocs reads it: its Markdown extensions (with mkdocs' own ``toc``,
    ``tables`` and ``fenced_code``), their settings, and its hooks."""
    return load_config(str(ROOT / "mkdocs.yml"))


def render(text: str) -> Rendered:
    """``text`` rendered the way the docs site renders a page (the hooks' ``page_markdown``,
    then Markdown with the site's extensions), then read."""
    site = _site()
    text = site.plugins.run_event("page_markdown", text, page=None, config=site, files=None)
    converter = markdown.Markdown(
        extensions=site["markdown_extensions"], extension_configs=site["mdx_configs"]
    )
    reader = _Reader()
    reader.feed(converter.convert(text))
    reader.close()
    return reader.page


@cache
def rendered(page: Path) -> Rendered:
    return render(page.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- 2. links

SCHEME = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")


def link_problem(page: Path, href: str) -> str | None:
    """Why ``href`` on ``page`` leads nowhere, or None (outside links are not followed)."""
    if SCHEME.match(href):
        return None
    path, _, anchor = href.partition("#")
    target = (page.parent / unquote(path)).resolve() if path else page
    if not target.exists():
        return "no such file"
    if anchor and target.suffix == ".md" and unquote(anchor) not in rendered(target).ids:
        return (
            f"no #{anchor} in {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}"
        )
    return None


def broken_links(page: Path) -> list[str]:
    """``page:line → target (why)`` for each relative link of ``page`` that leads nowhere."""
    lines = page.read_text(encoding="utf-8").splitlines()
    name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
    found = []
    for href in dict.fromkeys(rendered(page).hrefs):
        why = link_problem(page, href)
        if why is None:
            continue
        spelled = (f"]({href}", f"](<{href}>", f"]: {href}", f'="{href}"')
        numbers = [str(n) for n, line in enumerate(lines, 1) if any(s in line for s in spelled)]
        for number in numbers or ["?"]:
            found.append(f"{name}:{number} → {href} ({why})")
    return found


def linked_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_every_relative_link_reaches_a_file_and_an_anchor() -> None:
    pages = linked_pages()
    assert len(pages) > 20
    broken = [problem for page in pages for problem in broken_links(page)]
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_anchors_are_the_toc_slugs_of_headings_and_explicit_ids() -> None:
    page = render(
        "# Title\n\n## The `channel` setting: role, nonce\n\n## 1. Transports\n\n"
        "## 1. Transports\n\n### `-32700` parse error\n\nA paragraph.\n{#own-id}\n\n"
        "```\n## not a heading\n```\n"
    )
    assert slugify("The channel setting: role, nonce", "-") == "the-channel-setting-role-nonce"
    assert {
        "title",
        "the-channel-setting-role-nonce",
        "1-transports",
        "1-transports_1",
        "-32700-parse-error",
        "own-id",
    } <= page.ids
    assert "not-a-heading" not in page.ids


def test_broken_links_are_listed_by_page_line_and_target(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A section\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[fine](other.md#a-section), [fine too](#page), [web](https://example.com/x.md)\n"
        "[gone](missing.md) and [no anchor](other.md#nowhere)\n\n"
        "```\n[in code](missing-too.md)\n```\n\n"
        "`[inline](missing-three.md)` and ![picture](missing.png)\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        f"{page}:4 → missing.md (no such file)",
        f"{page}:4 → other.md#nowhere (no #nowhere in {tmp_path / 'other.md'})",
        f"{page}:10 → missing.png (no such file)",
    ]


# ---------------------------------------------------------------- 3. glossary words

# Words of the glossary used in their ordinary English sense: the glossary pins down how the
# docs use them, but a newcomer reads them right without it, so a page need not link them.
# What stays is the project's jargon (seam, envelope, directive, pending, committed, fired,
# drained, cadence, ...), whose meaning here cannot be guessed.
ORDINARY_WORDS = {
    "reminder",  # what the library is named for; every page uses it from its first line
    "turn",  # the agent-loop word every framework uses
    "injected",  # added: the plain sense
    "evaluated",  # a provider is asked: the plain sense
    "checked",
    "produced",
    "emitted",  # plain English (the bridge's `reminder_emitted` is code, not prose)
    "queued",  # in a queue: the plain sense
    "waiting",
    "delivered",  # plain English; "drained" is the queue's own word for the same step
    "revoked",  # taken back: the plain sense
    "expired",  # its lifetime ran out: the plain sense
    "lifetime",  # how long something lasts: the plain sense
    "ttl",  # time to live: common to caches and DNS, and spelled out as ttl_turns
    # the vocabulary of LLM agents and their providers, in the sense any framework gives it
    "provider",
    "generator",
    "compaction",
    "channel",
    "authority",
    "grant",
    "sub-agent",
    "propagate",
    "event log",
    "hook",  # a coding agent's hook or the library's `Hooks`: developers' common word
    "hook run",  # one run of a hook: the plain sense ("hook server" is jargon)
}


@dataclass(frozen=True)
class Word:
    """One glossary entry: the spellings a page is checked for, and where it is defined."""

    name: str
    spellings: tuple[str, ...]
    # (page, anchor or "") the entry links to: the sections that define the word
    sections: tuple[tuple[Path, str], ...]

    @property
    def pattern(self) -> re.Pattern[str]:
        forms = "|".join(r"\s+".join(map(re.escape, s.split())) for s in self.spellings)
        return re.compile(rf"(?<![\w/.-])(?:{forms})(?:e?s)?(?![\w/-])", re.IGNORECASE)


def glossary_words(text: str, at: Path = GLOSSARY) -> list[Word]:
    """The words of the glossary table ``| word | meaning |`` in ``text`` (the page at
    ``at``), without the ordinary ones."""
    words = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= set("-: "):
            continue
        if cells[0].lower() == "word":
            continue
        name = re.sub(r"<a [^>]*></a>", "", cells[0])  # the row's link targets are not words
        spellings = [s.strip(" *`") for s in name.split(",")]
        kept = tuple(s for s in spellings if s and s.lower() not in ORDINARY_WORDS)
        if not kept:
            continue
        sections = []
        for href in re.findall(r"\]\(([^)\s]+)\)", cells[1]):
            if not SCHEME.match(href):
                path, _, anchor = href.partition("#")
                sections.append(((at.parent / path).resolve() if path else at, anchor))
        words.append(Word(kept[0], kept, tuple(sections)))
    return words


def introduces(word: Word, page: Path, href: str | None) -> bool:
    """Whether a use of ``word`` inside a link to ``href`` on ``page`` introduces it."""
    if href is None or SCHEME.match(href):
        return False
    path, _, anchor = href.partition("#")
    target = (page.parent / unquote(path)).resolve() if path else page
    if target.name == GLOSSARY.name:
        return True
    return any(target == where and wanted in ("", anchor) for where, wanted in word.sections)


def first_use_problems(page: Path, words: list[Word], text: str | None = None) -> list[str]:
    """For each word whose first use on ``page`` (``text``, if given, stands for the file) is
    neither a link that introduces it nor on a page that defines it: ``page: 'word' first used
    in "…context…"``. Code, code blocks and headings are not uses."""
    prose = render(text) if text is not None else rendered(page)
    running = ""
    spans: list[tuple[int, int, str | None, bool]] = []
    for chunk, href, code in prose.prose:
        spans.append((len(running), len(running) + len(chunk), href, code))
        running += chunk
    problems = []
    for word in words:
        if page.resolve() in {where for where, _ in word.sections}:
            continue
        for found in word.pattern.finditer(running):
            _, _, href, code = next(s for s in spans if s[0] <= found.start() < s[1])
            if code:
                continue
            if not introduces(word, page, href):
                context = " ".join(running[max(0, found.start() - 40) : found.end() + 40].split())
                problems.append(f'{page.name}: {word.name!r} first used in "…{context}…"')
            break
    return problems


# Every docs page but the glossary is held to the glossary rule.
CHECKED_PAGES: tuple[str, ...] = tuple(
    sorted(p.name for p in DOCS.glob("*.md") if p.name != GLOSSARY.name)
)


@pytest.mark.parametrize("name", CHECKED_PAGES)
def test_a_checked_page_introduces_the_glossary_words(name: str) -> None:
    page = DOCS / name
    assert page.is_file(), name
    assert page != GLOSSARY
    problems = first_use_problems(page, glossary_words(GLOSSARY.read_text(encoding="utf-8")))
    assert not problems, "words used before they are introduced:\n" + "\n".join(problems)


def test_the_glossary_words_are_its_jargon() -> None:
    words = {w.name: w for w in glossary_words(GLOSSARY.read_text(encoding="utf-8"))}
    assert {"seam", "envelope", "directive", "pending", "committed", "drained"} <= set(words)
    assert not {"reminder", "turn", "hook"} & set(words)


GLOSSARY_SAMPLE = """# Glossary

| word | meaning |
|---|---|
| seam | A point of the loop (see [Sessions](loop.md#seams)). |
| **fire**, fired | Committed into an envelope. |
| turn | One model request. |
"""


def test_first_uses_must_link_the_glossary_or_the_defining_section(tmp_path: Path) -> None:
    words = glossary_words(GLOSSARY_SAMPLE, at=tmp_path / "glossary.md")
    assert [(w.name, w.spellings) for w in words] == [
        ("seam", ("seam",)),
        ("fire", ("fire", "fired")),
    ]
    page = tmp_path / "page.md"
    good = (
        "# Seams and fires\n\n`seam` and\n\n```\nfired\n```\n\n"
        "At each [seam](loop.md#seams) a reminder may be [fired](glossary.md); later seams and "
        "fires need no link. A turn is plain English.\n"
    )
    assert first_use_problems(page, words, good) == []
    bad = "# Page\n\nEach seam, then a [seam](other.md) link; it fires. See [fire](loop.md).\n"
    assert first_use_problems(page, words, bad) == [
        "page.md: 'seam' first used in \"…Each seam, then a seam link; it fires. See fire.…\"",
        "page.md: 'fire' first used in \"…Each seam, then a seam link; it fires. See fire.…\"",
    ]
    # on the page its entry links to, a word needs no link
    assert first_use_problems(tmp_path / "loop.md", words, "Each seam.\n") == []
