"""bench/cache.py end to end: the full 200-turn session, five strategies, scored by the audit.

The benchmark is deterministic (no clock), so its figures are asserted here: the library's
targets of issue 14 on both channels, what each other strategy's placement of the reminders
costs, and what ``clear_at`` takes out of the model's view on Anthropic's wire.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_reminders.audit import audit_file

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "cache.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, str(BENCH), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(run("--json").stdout)
    return found


@pytest.mark.parametrize("channel", ["envelope", "system_channel"])
def test_the_library_meets_its_targets(figures: dict[str, Any], channel: str) -> None:
    library = figures["strategies"][channel]
    assert library["requests"] == 200
    assert library["prefix_breaks"] == []
    assert library["reuse"]["exact"] >= 0.985
    assert library["uncached_over_final"] <= 1.02
    assert library["reuse"]["anthropic"] >= 0.98
    assert library["directive_overhead"] <= 0.025


def test_the_system_channel_costs_the_cache_nothing(figures: dict[str, Any]) -> None:
    strategies = figures["strategies"]
    user, system = strategies["envelope"], strategies["system_channel"]
    # the same envelopes in another role: the same reuse, within the tokens of the role name
    assert system["reuse"] == user["reuse"]
    assert abs(system["final_prompt_tokens"] - user["final_prompt_tokens"]) < 100
    assert system["cost_ratio"] == user["cost_ratio"]


def test_clear_at_takes_one_turn_envelopes_out_of_view_at_no_cache_cost(
    figures: dict[str, Any],
) -> None:
    wire = figures["anthropic"]
    assert list(wire) == ["envelope", "system_channel", "system_channel+clear_at"]
    plain, cleared = wire["system_channel"], wire["system_channel+clear_at"]
    for report in wire.values():
        assert report["format"] == "anthropic"
        assert report["requests"] == 200
        assert report["prefix_breaks"] == []
        assert report["reuse"]["anthropic"] >= 0.98
    # without clear_at the model sees every kept envelope
    for key in ("envelope", "system_channel"):
        assert wire[key]["seen_directive_tokens"] == wire[key]["final_directive_tokens"]
        assert wire[key]["directive_tokens_seen_over_requests"] == wire[key]["directive_tokens"]
        assert wire[key]["clear_at_entries"] == 0
        assert wire[key]["betas"] == []
    # with it, the one-turn envelopes a later user entry passed are out of view
    assert cleared["clear_at_entries"] > 0
    assert cleared["seen_directive_tokens"] < plain["seen_directive_tokens"]
    assert cleared["directive_tokens_seen_over_requests"] < plain["directive_tokens"]
    # the entries stay, byte for byte: the cache figures move only by the few tokens of
    # the clear_at keys
    assert cleared["uncached_over_final"] == plain["uncached_over_final"] == 1.0
    for model, reuse in plain["reuse"].items():
        assert cleared["reuse"][model] == pytest.approx(reuse, abs=0.0002)
    assert cleared["betas"] == ["mid-conversation-system-clear-at-2026-08-21"]


def test_every_other_strategy_breaks_the_prefix_and_pays_for_it(figures: dict[str, Any]) -> None:
    strategies = figures["strategies"]
    library = strategies["envelope"]
    reasons = {
        name: {b["reason"] for b in report["prefix_breaks"]}
        for name, report in strategies.items()
        if name not in ("envelope", "system_channel")
    }
    assert reasons == {
        "system_prompt": {"system_changed"},
        "edit_history": {"message_changed"},
        "ephemeral_tail": {"message_changed"},
    }
    # every request drops the previous request's tail
    assert len(strategies["ephemeral_tail"]["prefix_breaks"]) == 199
    for name, report in strategies.items():
        assert report["requests"] == 200
        if name not in ("envelope", "system_channel"):
            assert report["uncached_over_final"] > library["uncached_over_final"]
            assert report["uncached_tokens"]["exact"] > library["uncached_tokens"]["exact"]
            assert report["cost_ratio"]["anthropic"] > library["cost_ratio"]["anthropic"]
    # the automatic Anthropic breakpoint sits on the tail, which the next request drops
    assert strategies["ephemeral_tail"]["reuse"]["anthropic"] == 0.0
    assert strategies["ephemeral_tail"]["cost_ratio"]["anthropic"] == 1.25


def test_identical_content_so_the_baselines_prompts_agree(figures: dict[str, Any]) -> None:
    strategies = figures["strategies"]
    finals = {n: r["final_prompt_tokens"] for n, r in strategies.items()}
    # the baselines differ only in where the active reminders sit: their final prompts are
    # within a few hundred tokens; the library's is longer by its kept envelopes
    baselines = [finals["system_prompt"], finals["edit_history"], finals["ephemeral_tail"]]
    assert max(baselines) - min(baselines) < 500
    assert finals["envelope"] > max(baselines)
    assert finals["system_channel"] > max(baselines)
    assert strategies["envelope"]["directive_tokens"] > 0


def test_the_saved_requests_audit_to_the_same_figures(tmp_path: Path) -> None:
    saved = tmp_path / "requests"
    found = json.loads(run("--turns", "40", "--no-variants", "--json", "--save", str(saved)).stdout)
    assert sorted(p.name for p in saved.iterdir()) == [
        "anthropic-envelope.jsonl",
        "anthropic-system_channel+clear_at.jsonl",
        "anthropic-system_channel.jsonl",
        "edit_history.jsonl",
        "envelope.jsonl",
        "ephemeral_tail.jsonl",
        "system_channel.jsonl",
        "system_prompt.jsonl",
    ]
    for name, expected in found["strategies"].items():
        report = audit_file(saved / f"{name}.jsonl").to_json()
        assert report == expected
        assert report["format"] == "openai_chat"
        assert report["requests"] == 40
    for key, wire in found["anthropic"].items():
        report = audit_file(saved / f"anthropic-{key}.jsonl").to_json()
        assert report == {k: v for k, v in wire.items() if k in report}
        assert report["format"] == "anthropic"
    # the system channel's envelopes as the wire formats send them
    chat = json.loads((saved / "system_channel.jsonl").read_text().splitlines()[-1])
    assert "developer" in {m["role"] for m in chat["messages"]}
    claude = json.loads(
        (saved / "anthropic-system_channel+clear_at.jsonl").read_text().splitlines()[-1]
    )
    entries = [m for m in claude["messages"] if m["role"] == "system"]
    assert entries
    assert all("<context-directives" in str(m["content"]) for m in entries)
    assert any(m.get("clear_at") == "next_user_message" for m in entries)


def test_the_variants_show_what_the_directive_overhead_depends_on(
    figures: dict[str, Any],
) -> None:
    variants = list(figures["variants"].values())
    assert len(variants) == 3
    overheads = [v["directive_overhead"] for v in variants]
    assert overheads == sorted(overheads)  # denser reminders, shorter outputs: more overhead
    for v in variants:
        assert v["prefix_breaks"] == []
        assert v["uncached_over_final"] == 1.0


def test_the_results_section(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    done = run("--turns", "40", "--no-variants", "--output", str(out))
    text = out.read_text(encoding="utf-8")
    assert "## Cache reuse by strategy (`bench/cache.py`)" in text
    for label in (
        "this library",
        "this library, system channel",
        "rewriting the system prompt",
        "editing earlier messages",
        "system channel with `clear_at` on one-turn envelopes",
    ):
        assert f"| {label}" in text
    assert "uncached tokens ÷ the final prompt" in text  # the chart
    assert "of them the model still sees" in text
    assert "library targets" in done.stdout
