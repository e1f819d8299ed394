"""The four cache models (docs/audit.md) against figures computed by hand on small examples.

The bytes/4 tokenizer makes the hand counts exact: a message ``{"content":"…","role":"user"}``
is 12 bytes, the text, then 16 bytes, one token per 4 bytes (the last one shorter).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from audit_helpers import assistant, canon, text_block, tokens_b4, user

from agent_reminders import Message, ModelRequest
from agent_reminders.audit import AuditReport, audit_requests
from agent_reminders.integrations import to_anthropic

BIG = user("x" * 5000)  # 12 + 5000 + 16 = 5028 bytes: 1257 tokens
SMALL = [user(f"s{i}") if i % 2 else assistant(f"s{i}") for i in range(30)]


def b4(requests: list[Any], **kwargs: Any) -> AuditReport:
    return audit_requests(requests, encoding="bytes/4", **kwargs)


def chat(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"messages": list(messages)}


def test_hand_counts() -> None:
    assert tokens_b4(BIG) == 1257


def test_exact_compares_tokens_inside_the_first_differing_message() -> None:
    first, second = user("a" * 4000 + "b" * 100), user("a" * 4000 + "c" * 100)
    report = b4([chat(first), chat(second)])
    row = report.rows[1]
    # 12 + 4000 bytes in common: 1003 whole tokens; the prompt is 4128 bytes: 1032 tokens
    assert row.prompt_tokens == 1032
    assert row.cached == {"exact": 1003, "openai": 0, "anthropic": 0, "vllm": 992}
    assert report.uncached_tokens["exact"] == 1032 + 1032 - 1003


def test_exact_finds_the_longest_match_in_any_earlier_request() -> None:
    other = user("y" * 5000)
    report = b4([chat(BIG), chat(other), chat(BIG, SMALL[1])])
    assert report.rows[1].cached["exact"] == 3  # '{"content":"' only
    assert report.rows[2].cached["exact"] == 1257  # request 0, two lines back


def test_openai_steps_of_128_from_1024_and_vllm_blocks_of_16() -> None:
    report = b4([chat(BIG), chat(BIG, SMALL[1])])
    row = report.rows[1]
    assert row.prompt_tokens == 1257 + tokens_b4(SMALL[1])
    assert row.cached["exact"] == 1257
    assert row.cached["openai"] == 1152  # 9 x 128
    assert row.cached["vllm"] == 1248  # 78 x 16
    # below 1,024 tokens OpenAI caches nothing
    small = user("x" * 3000)  # 757 tokens
    below = b4([chat(small), chat(small, SMALL[1])]).rows[1]
    assert below.cached["exact"] == 757
    assert below.cached["openai"] == 0
    assert below.cached["vllm"] == 752


def test_cost_ratio_openai_at_default_and_given_prices() -> None:
    report = b4([chat(BIG), chat(BIG, SMALL[1])])
    p0, p1 = report.rows[0].prompt_tokens, report.rows[1].prompt_tokens
    assert report.cost_ratio["openai"] == pytest.approx((p0 + p1 - 1152 + 0.1 * 1152) / (p0 + p1))
    priced = b4([chat(BIG), chat(BIG, SMALL[1])], price_read=0.5)
    assert priced.cost_ratio["openai"] == pytest.approx((p0 + p1 - 1152 * 0.5) / (p0 + p1))


@pytest.mark.parametrize(("added", "hit"), [(19, True), (20, True), (21, False), (25, False)])
def test_anthropic_look_back_of_20_blocks(added: int, hit: bool) -> None:
    # request 0 writes an entry at its last block (BIG, 1,257 tokens); request 1 has no
    # marker, so its breakpoint is its last block, `added` blocks after BIG's
    report = b4([chat(BIG), chat(BIG, *SMALL[:added])])
    row = report.rows[1]
    assert row.cached["exact"] == 1257
    assert row.cached["anthropic"] == (1257 if hit else 0)
    assert row.anthropic_written == row.prompt_tokens - row.cached["anthropic"]


def test_an_explicit_breakpoint_reaches_past_the_look_back() -> None:
    marked = {"role": "user", "content": [text_block("x" * 5000, mark=True)]}
    plain = {"role": "user", "content": [text_block("x" * 5000)]}
    report = b4([chat(marked), chat(marked, *SMALL[:25])])
    assert report.format == "anthropic"
    row = report.rows[1]
    assert row.cached["anthropic"] == tokens_b4(plain)
    # its only breakpoint is already cached: nothing written
    assert row.anthropic_written == 0


def test_anthropic_writes_nothing_under_1024_tokens() -> None:
    small = user("x" * 3000)  # 757 tokens
    report = b4([chat(small), chat(small, SMALL[1])])
    assert report.rows[0].anthropic_written == 0
    assert report.rows[1].cached["anthropic"] == 0
    assert report.rows[1].anthropic_written == 0
    # once the prompt passes 1,024 tokens the write happens
    grown = b4([chat(small), chat(small, user("y" * 2000))])
    assert grown.rows[1].anthropic_written == grown.rows[1].prompt_tokens


def test_anthropic_prices_reads_and_writes() -> None:
    requests = [chat(BIG), chat(BIG, *SMALL[:5])]
    for read, write in ((0.1, 1.25), (0.5, 2.0)):
        report = b4(requests, price_read=read, price_write=write)
        p0, p1 = report.rows[0].prompt_tokens, report.rows[1].prompt_tokens
        # request 0 writes all of itself; request 1 reads BIG and writes the rest
        cost = p0 * write + 1257 * read + (p1 - 1257) * write
        assert report.cost_ratio["anthropic"] == pytest.approx(cost / (p0 + p1))
        assert report.price_read == read
        assert report.price_write == write


def test_tools_and_system_are_blocks_and_a_system_breakpoint_is_read() -> None:
    tools = [
        {"name": "ls", "description": "list", "input_schema": {}},
        {"name": "cat", "description": "print", "input_schema": {}},
    ]
    system = [text_block("S" * 5000, mark=True)]

    def body(text: str) -> dict[str, Any]:
        block = text_block(text, mark=True)
        return {
            "tools": tools,
            "system": system,
            "messages": [{"role": "user", "content": [block]}],
        }

    report = b4([body("first question"), body("another question")])
    head = tokens_b4(tools) + tokens_b4([text_block("S" * 5000)])
    assert report.rows[1].cached["anthropic"] == head
    assert report.rows[1].cached["exact"] > head  # '{"content":[{"text":"' is common too


def test_a_breakpoint_inside_a_message_counts_the_blocks_before_it() -> None:
    b0, b2, b2_new = "p" * 3000, "r" * 3000, "z" * 3000

    def body(last: str) -> dict[str, Any]:
        blocks = [text_block(b0), text_block("q" * 3000, mark=True), text_block(last)]
        return chat({"role": "user", "content": blocks})

    report = b4([body(b2), body(b2_new)])
    seg0 = '{"content":[' + canon(text_block(b0))
    seg1 = "," + canon(text_block("q" * 3000))
    through_block_1 = math.ceil(len(seg0) / 4) + math.ceil(len(seg1) / 4)
    exact = (len(seg0) + len(seg1) + len(',{"text":"')) // 4
    assert report.rows[1].cached["exact"] == exact
    assert report.rows[1].cached["anthropic"] == min(through_block_1, exact)
    assert report.rows[1].cached["anthropic"] > 1500  # two blocks of 750 tokens


def test_a_top_level_cache_control_adds_the_last_block_as_a_breakpoint() -> None:
    marked = {"role": "user", "content": [text_block("x" * 5000, mark=True)]}
    plain = {"role": "user", "content": [text_block("x" * 5000)]}
    tail = user("t" * 2000)
    first = chat(marked, SMALL[1], tail)  # breakpoint: the marked block only
    second = chat(plain, SMALL[1], tail, SMALL[3])  # no marker: its last block
    without = b4([first, second]).rows[1]
    with_auto = b4([{**first, "cache_control": {"type": "ephemeral"}}, second]).rows[1]
    assert without.cached["anthropic"] == tokens_b4(plain)
    assert with_auto.cached["anthropic"] == with_auto.prompt_tokens - tokens_b4(SMALL[3])


def test_the_library_s_own_breakpoints_survive_long_turns() -> None:
    """to_anthropic's third breakpoint keeps the look-back finding the last entry when
    a turn adds more than 20 blocks."""
    history: list[Message] = [{"role": "user", "content": "q " * 3000}]
    bodies = []
    for turn in range(3):
        bodies.append(to_anthropic(ModelRequest(system="S " * 600, messages=list(history))))
        history.append({"role": "assistant", "content": f"answer {turn}"})
        history.extend({"role": "user", "content": f"note {turn}.{i}"} for i in range(25))
    report = b4(bodies)
    assert report.prefix_breaks == ()
    for row in report.rows[1:]:
        # the marker on the block before the last assistant turn finds the whole previous
        # request, 26 blocks back
        assert row.cached["anthropic"] == report.rows[row.index - 1].prompt_tokens
    # without that marker the look-back would miss it
    stripped = [
        {**body, "messages": [{**m, "content": m["content"][:]} for m in body["messages"]]}
        for body in bodies
    ]
    for body in stripped:
        for message in body["messages"][:-1]:
            message["content"] = [
                {k: v for k, v in block.items() if k != "cache_control"}
                for block in message["content"]
            ]
    assert all(r.cached["anthropic"] == 0 for r in b4(stripped).rows[1:])


def test_directive_tokens_and_overhead() -> None:
    envelope = user('<context-directives speaker="harness">keep tests green</context-directives>')
    reminder = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "ok"},
            text_block("<system-reminder>the file changed</system-reminder>"),
        ],
    }
    line = {"session_id": "s", "system": "", "messages": [BIG, envelope]}
    report = b4([line, {**line, "messages": [BIG, envelope, SMALL[0]]}])
    assert report.directive_tokens == 2 * tokens_b4(envelope)
    assert report.directive_overhead == pytest.approx(
        report.directive_tokens / report.prompt_tokens
    )
    anthropic = b4([{"system": "s", "messages": [BIG, reminder]}])
    assert anthropic.directive_tokens == tokens_b4(reminder)
    assert b4([chat(BIG)]).directive_tokens == 0


def test_uncached_over_final_counts_what_a_break_prefills_again() -> None:
    clean = b4([chat(BIG), chat(BIG, SMALL[1]), chat(BIG, SMALL[1], SMALL[2])])
    assert clean.uncached_over_final == 1.0
    assert clean.uncached_tokens["exact"] == clean.final_prompt_tokens
    other = user("y" * 5000)
    broken = b4([chat(BIG), chat(other)])
    p0, p1 = broken.rows[0].prompt_tokens, broken.rows[1].prompt_tokens
    assert broken.uncached_tokens["exact"] == p0 + p1 - 3
    assert broken.uncached_over_final == pytest.approx((p0 + p1 - 3) / p1)


def test_reuse_is_cached_over_all_prompt_tokens() -> None:
    report = b4([chat(BIG), chat(BIG, SMALL[1])])
    total = report.rows[0].prompt_tokens + report.rows[1].prompt_tokens
    assert report.prompt_tokens == total
    assert report.reuse["exact"] == pytest.approx(1257 / total)
    assert report.reuse["openai"] == pytest.approx(1152 / total)
    assert report.reuse["vllm"] == pytest.approx(1248 / total)


@pytest.mark.usefixtures("tiktoken_encodings")
def test_tiktoken_counts_each_element_s_canonical_json() -> None:
    import tiktoken

    system = {"role": "system", "content": "Be brief."}
    body = {"messages": [system, user("héllo wörld"), assistant("ok")]}
    for name in ("o200k_base", "cl100k_base"):
        report = audit_requests([body], encoding=name)
        enc = tiktoken.get_encoding(name)
        expected = sum(len(enc.encode(canon(m))) for m in body["messages"])
        assert report.encoding == name
        assert report.tokenizer_note is None
        assert report.prompt_tokens == expected
