"""Properties of the audit (Hypothesis): an append-only sequence of requests, in any format and
with any text, has no prefix break and prefills each token once (``uncached_over_final`` is
1.0 under ``exact``); an edited sequence breaks exactly where ``check_append_only`` says."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import check_append_only
from agent_reminders.audit import audit_requests

texts = st.text(min_size=1, max_size=60)
messages = st.lists(
    st.builds(
        lambda role, text: {"role": role, "content": text},
        st.sampled_from(["user", "assistant"]),
        texts,
    ),
    min_size=1,
    max_size=12,
)


@st.composite
def growing(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    """Successive message lists, each a prefix of the next (steps of 0 included)."""
    history = draw(messages)
    cuts = sorted(draw(st.lists(st.integers(1, len(history)), min_size=1, max_size=8)))
    return [history[:cut] for cut in [*cuts, len(history)]]


def body(fmt: str, system: str, msgs: list[dict[str, Any]]) -> dict[str, Any]:
    if fmt == "openai_chat":
        return {"messages": [{"role": "system", "content": system}, *msgs]}
    if fmt == "openai_responses":
        return {"instructions": system, "input": msgs}
    if fmt == "log":
        return {"session_id": "s", "turn": 0, "system": system, "messages": msgs}
    # Anthropic, with the breakpoint moving to the last block on every request
    blocks = [
        {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in msgs
    ]
    blocks[-1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    return {"system": system, "messages": blocks}


FORMATS = ["openai_chat", "openai_responses", "anthropic", "log"]


@pytest.mark.parametrize("encoding", ["o200k_base", "bytes/4"])
@settings(max_examples=60, deadline=None)
@given(sequence=growing(), system=texts, fmt=st.sampled_from(FORMATS))
def test_append_only_has_no_break_and_prefills_each_token_once(
    encoding: str, sequence: list[list[dict[str, Any]]], system: str, fmt: str
) -> None:
    report = audit_requests([body(fmt, system, m) for m in sequence], encoding=encoding)
    assert report.format == fmt
    assert report.prefix_breaks == ()
    assert report.uncached_over_final == 1.0
    data = report.to_json()
    assert data["uncached_over_final"] == 1.0
    assert data["uncached_tokens"]["exact"] == data["final_prompt_tokens"]
    for row in report.rows[1:]:
        assert row.cached["exact"] >= report.rows[row.index - 1].prompt_tokens
    for model in ("openai", "anthropic", "vllm"):
        assert all(0 <= r.cached[model] <= r.cached["exact"] for r in report.rows)


@st.composite
def edited(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    sequence = draw(growing())
    out = []
    for msgs in sequence:
        change = draw(st.sampled_from(["keep", "keep", "edit", "drop", "cut"]))
        msgs = list(msgs)
        if change == "edit":
            at = draw(st.integers(0, len(msgs) - 1))
            msgs[at] = {**msgs[at], "content": msgs[at]["content"] + "!"}
        elif change == "drop" and len(msgs) > 1:
            del msgs[draw(st.integers(0, len(msgs) - 1))]
        elif change == "cut":
            msgs = msgs[: draw(st.integers(0, len(msgs)))]
        out.append(msgs)
    return out


@settings(max_examples=200, deadline=None)
@given(sequence=edited(), fmt=st.sampled_from(["openai_chat", "log"]))
def test_breaks_are_where_check_append_only_finds_them(
    sequence: list[list[dict[str, Any]]], fmt: str
) -> None:
    report = audit_requests([body(fmt, "sys", m) for m in sequence], encoding="bytes/4")
    found = [(b.request, b.message, b.reason) for b in report.prefix_breaks]
    expected = [(b.request_index, b.message_index, b.reason) for b in check_append_only(sequence)]
    assert found == expected
