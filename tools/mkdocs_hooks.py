"""mkdocs hooks for the docs site (``hooks:`` in mkdocs.yml).

Some pages annotate their code fences for the tests that run them: ``json request
ws=EDITOR_TOKEN``, ``toml file=serve.toml``, ``console server`` (``docs/protocol.md``; read by
``tests/bridge/test_protocol_doc.py``). Markdown's fenced-code syntax takes a language and
quoted options only, so an unquoted ``ws=...`` would leave the fence unrecognised and the
rest of the page garbled. For the site, each such fence keeps its language and shows the
annotation as the block's title; the files themselves are left as the tests read them.

The reference pages write ``<!-- generated: NAME -->`` where a table belongs: the table is made
from the library's own tables when the site is built (``tools/reference_tables.py``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tools/, for reference_tables

import reference_tables

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<lang>[\w#.+-]+)[ \t]+(?P<rest>[^\n]*\S)[ \t]*$",
    re.M,
)


def _title(rest: str) -> str:
    """The annotation as a title: ``file=serve.toml`` is the file's name."""
    words = rest.split()
    files = [w.split("=", 1)[1] for w in words if w.startswith("file=")]
    if files and len(words) == 1:
        return files[0]
    return " ".join(words)


def titled_fences(markdown: str) -> str:
    """``markdown`` with each annotated fence opening as ``lang title="annotation"``."""

    def fence(m: re.Match[str]) -> str:
        rest = m.group("rest")
        if "title=" in rest or rest.startswith("{"):
            return m.group(0)
        title = _title(rest).replace('"', "'")
        return f'{m.group("indent")}{m.group("fence")}{m.group("lang")} title="{title}"'

    return _FENCE.sub(fence, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return titled_fences(reference_tables.expand(markdown))
