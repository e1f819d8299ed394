"""A griffe extension for the docs site: the library's docstrings as mkdocstrings reads them.

The docstrings are written for ``help()`` and doctest: Google-style sections, Sphinx roles
(``:class:`Session```) and ``Example:`` sections of ``>>>`` lines. mkdocstrings renders the
text as Markdown, where a role would print as it is and an ``Example:`` section is an
admonition whose doctest lines read as block quotes. Before a docstring is parsed this turns
each role into inline code and ``Example:`` into ``Examples:``, which griffe renders as code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|data|attr|exc|mod|obj|const):`~?([^`]+)`")
_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


def markdown_docstring(text: str) -> str:
    """``text`` with roles as inline code and ``Example:`` sections as ``Examples:``."""
    text = _ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    return _EXAMPLE.sub(r"\1Examples:", text)


class MarkdownDocstrings(griffe.Extension):
    """Rewrites every docstring with :func:`markdown_docstring` when its object is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
