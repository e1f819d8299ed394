"""``audit --html``: one self-contained page (no network), figures, a chart per cache model
with cached vs uncached tokens per request, prefix breaks marked. Checked by structure; the
look was checked in headless Chromium by hand (docs/audit.md says how)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html.parser import HTMLParser
from typing import get_args

import pytest
from audit_helpers import assistant, user

from agent_reminders.audit import MODELS, AuditBreak, BreakReason, audit_requests, render_html
from agent_reminders.audit.breaks import explain_break

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


# -- every red mark says what it means (issue 27) ------------------------------------------------


def cards(html: str) -> dict[str, tuple[str, str]]:
    """Each card's caption (its ``k``) → (its tone, its ``why``)."""
    found = re.findall(
        r'<div class="card ([a-z]*)"><div class="v">[^<]*</div><div class="k">([^<]*)</div>'
        r'(?:<div class="why">([^<]*)</div>)?',
        html,
    )
    return {key: (tone, why) for tone, key, why in found}


def test_a_break_at_a_known_compaction_is_the_intended_one() -> None:
    report = audit_requests([log("s", A), log("s", A, B), log("s", B), log("s", B, A)])
    plain = render_html(report)
    html = render_html(report, compactions=(2,))
    said = "the one intended break: compaction at request 2"
    assert said not in plain
    assert html.count(said) >= 2  # the card, the table, the line under each chart
    assert ">compaction: the intended break</text>" in html
    assert cards(html)["prefix breaks"] == ("", said)  # not red: it is what was meant
    tone, why = cards(html)["uncached ÷ final (ideal 1.0)"]
    assert tone == ""
    assert why.endswith("each compaction adds one more prefill (here the one at request 2)")
    assert "Here: the one intended break: compaction at request 2." in html


def test_any_other_break_is_red_and_says_what_its_reason_means() -> None:
    report = audit_requests(
        [log("s", A), log("s", A, B), log("s", B), log("s", B, A, system="new")],
        encoding="bytes/4",
    )
    html = render_html(report, compactions=(9,))  # a compaction elsewhere changes nothing
    tone, why = cards(html)["prefix breaks"]
    assert tone == "bad"
    assert why.startswith("2 requests did not begin with the one before it")
    message_0 = (
        "message 0 changed: the history was rewritten (a compaction does this on purpose; "
        "anything else breaks the provider&#x27;s cache)"
    )
    system = "the system prompt changed: the whole prompt after it is prefilled again"
    assert f"<td>message_changed</td><td>{message_0}</td>" in html
    assert f"<td>system_changed</td><td>{system}</td>" in html
    assert ">message 0 changed</text>" in html
    assert ">the system prompt changed</text>" in html
    assert "<th>what it means</th>" in html


def test_uncached_over_final_is_explained_with_its_numbers() -> None:
    report = audit_requests([log("s", A), log("s", A, B), log("s", B)], encoding="bytes/4")
    tone, why = cards(render_html(report))["uncached ÷ final (ideal 1.0)"]
    assert tone == "bad"
    assert why == (
        f"{report.uncached_over_final:.2f}: the prompt tokens that had to be prefilled "
        f"({report.uncached_tokens['exact']:,}), over the final prompt "
        f"({report.final_prompt_tokens:,}); 1.0 is the ideal of an append-only log; each "
        "compaction adds one more prefill"
    )
    ideal = audit_requests([log("s", A), log("s", A, B)], encoding="bytes/4")
    assert cards(render_html(ideal))["uncached ÷ final (ideal 1.0)"] == ("good", "")


@pytest.mark.parametrize("reason", get_args(BreakReason))
@pytest.mark.parametrize("message", [-1, 0, 3])
def test_every_break_reason_has_plain_words(reason: BreakReason, message: int) -> None:
    words = explain_break(AuditBreak(request=5, message=message, reason=reason))
    assert words[0].islower()  # a caption: it follows a figure or a request number
    assert "_" not in words  # not the reason's code name
    intended = explain_break(AuditBreak(5, message, reason), compaction=True)
    assert intended == "an intended break: compaction at request 5"
