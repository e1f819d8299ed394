"""``audit --html``: one self-contained page (no network), figures, a chart per cache model
with cached vs uncached tokens per request, prefix breaks marked. Checked by structure; the
look was checked in headless Chromium by hand (docs/audit.md says how)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html.parser import HTMLParser

from audit_helpers import assistant, user

from agent_reminders.audit import MODELS, audit_requests, render_html

A, B = user("read the file " * 40), assistant("done " * 40)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def page(requests: Sequence[object]) -> tuple[str, list[tuple[str, dict[str, str | None]]]]:
    html = render_html(audit_requests(requests, encoding="bytes/4"))
    parser = _Tags()
    parser.feed(html)
    return html, parser.tags


def log(session: str, *messages: dict[str, str], system: str = "sys") -> dict[str, object]:
    return {"session_id": session, "turn": 0, "system": system, "messages": list(messages)}


def test_the_page_is_self_contained() -> None:
    html, tags = page([log("s", A), log("s", A, B), log("s", B)])
    assert html.startswith("<!doctype html>")
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", html, re.I)
    assert "url(" not in html
    assert "@import" not in html
    for tag, attrs in tags:
        assert tag not in {"link", "img", "iframe", "object", "embed"}
        assert "src" not in attrs
        assert "href" not in attrs
    assert [t for t, _ in tags].count("style") == 1


def test_one_chart_per_model_with_a_cached_and_an_uncached_bar_per_request() -> None:
    html, tags = page([log("s", A), log("s", A, B), log("s", A, B, A)])
    charts = [a["data-model"] for t, a in tags if t == "div" and a.get("class") == "chart"]
    assert charts == list(MODELS)
    assert [t for t, _ in tags].count("svg") == len(MODELS)
    cached = [a for t, a in tags if t == "rect" and a.get("class") == "cached"]
    uncached = [a for t, a in tags if t == "rect" and a.get("class") == "uncached"]
    assert len(cached) == len(uncached) == 3 * len(MODELS)
    # each bar's tooltip gives the figures
    assert re.search(r"<title>request 1, session s: [0-9,]+ prompt tokens, [0-9,]+ cached, ", html)


def test_breaks_are_marked_in_every_chart_and_listed() -> None:
    html, tags = page([log("s", A), log("s", A, B), log("s", B), log("s", B, A, system="new")])
    marks = [a["data-request"] for t, a in tags if t == "g" and a.get("class") == "break"]
    assert marks == ["2", "3"] * len(MODELS)
    assert "message_changed" in html
    assert "system_changed" in html
    assert "<h2>Prefix breaks</h2><table>" in html


def test_no_break_says_so() -> None:
    html, tags = page([log("s", A), log("s", A, B)])
    assert not [a for t, a in tags if t == "g" and a.get("class") == "break"]
    assert "None: every request extends the one before it." in html


def test_text_from_the_log_is_escaped() -> None:
    html, tags = page([log("<script>alert(1)</script>", A), log("<script>alert(1)</script>", B)])
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "script" not in [t for t, _ in tags]


def test_many_breaks_draw_marks_without_labels() -> None:
    requests = [log("s", A, system=f"system {i}") for i in range(30)]
    html, tags = page(requests)
    marks = [a for t, a in tags if t == "g" and a.get("class") == "break"]
    assert len(marks) == 29 * len(MODELS)
    assert html.count(">system_changed</text>") == 0


def test_the_fallback_tokenizer_is_said_on_the_page() -> None:
    report = audit_requests([log("s", A)], encoding="bytes/4")
    assert "bytes/4" in render_html(report)
