"""How fast ``agent-reminders audit`` reads a long request log (the target: a 200-request log
of 100k-token prompts in a few seconds).

A seeded session resumes a long history (about 100k tokens) and then sends 200 requests, each
appending a user turn, an assistant turn with a tool call and its tool result, with a reminder
envelope every fourth turn and one compaction (the one prefix break). The requests are written
three ways — the library's request log, OpenAI Chat bodies (``to_openai_chat``) and Anthropic
Messages bodies with cache breakpoints (``to_anthropic``) — and each file is audited through
:func:`agent_reminders.audit.audit_file`, the code of the command; the time includes reading
and parsing the file.

    TIKTOKEN_CACHE_DIR=<tiktoken cache> python bench/audit_speed.py [--requests 200]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _results import machine, write_section
from agent_reminders import ModelRequest
from agent_reminders.audit import AuditReport, audit_file
from agent_reminders.integrations import to_anthropic, to_openai_chat

VOCABULARY = (
    "the a file test module function returns value error line path config session cache "
    "token prompt request model tool result assistant user reminder context directive import "
    "class def self return None True False pytest assert raise except open read write json "
    "yaml http server client queue store sqlite redis bridge loop turn budget"
)
WORDS = VOCABULARY.split()

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def session(requests: int, seed: int = 7) -> list[ModelRequest]:
    """The requests of one seeded session."""
    rng = random.Random(seed)
    system = "You are a coding agent. " + text(rng, 600)
    history: list[dict[str, Any]] = []
    while sum(len(m["content"]) for m in history) < 560_000:  # ~100k tokens resumed
        history.append({"role": "user", "content": text(rng, 120)})
        history.append({"role": "assistant", "content": text(rng, 180)})
    out = []
    for turn in range(requests):
        if turn == requests * 3 // 5:  # the compaction: old turns replaced by a recap
            keep = history[len(history) // 3 :]
            history = [{"role": "user", "content": "Recap: " + text(rng, 400)}, *keep]
        history.append({"role": "user", "content": text(rng, 40)})
        if turn % 4 == 0:
            history.append(
                {
                    "role": "user",
                    "content": '<context-directives speaker="harness">\n<directive '
                    f'id="r{turn}" authority="advisory">{text(rng, 30)}</directive>\n'
                    "</context-directives>",
                }
            )
        out.append(
            ModelRequest(
                system=system,
                messages=list(history),
                tools=TOOLS,
                session_id="bench",
                turn=turn,
            )
        )
        call = {"id": f"c{turn}", "name": "read_file", "arguments": {"path": f"src/m{turn}.py"}}
        history.append({"role": "assistant", "content": "", "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": f"c{turn}", "content": text(rng, 60)})
    return out


def log_line(request: ModelRequest) -> dict[str, Any]:
    return {
        "session_id": request.session_id,
        "turn": request.turn,
        "system": request.system,
        "messages": list(request.messages),
    }


FORMATS: dict[str, Callable[[ModelRequest], dict[str, Any]]] = {
    "request log": log_line,
    "OpenAI Chat": to_openai_chat,
    "Anthropic (breakpoints)": to_anthropic,
}


def timed(path: Path, runs: int) -> tuple[list[float], AuditReport]:
    times, report = [], None
    for _ in range(runs):
        start = time.perf_counter()
        report = audit_file(path)
        times.append(time.perf_counter() - start)
    assert report is not None
    return times, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--output", type=Path, default=None, help="results file to update")
    args = parser.parse_args()
    requests = session(args.requests)
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, convert in FORMATS.items():
            path = Path(tmp) / "requests.jsonl"
            with path.open("w", encoding="utf-8") as f:
                for request in requests:
                    f.write(json.dumps(convert(request), ensure_ascii=False) + "\n")
            size = path.stat().st_size / 1e6
            times, report = timed(path, args.runs)
            figures = report.to_json()
            median = statistics.median(times)
            prompts = [r.prompt_tokens for r in report.rows]
            rows.append(
                f"| {name} | {figures['format']} | {size:.0f} "
                f"| {min(prompts):,} to {max(prompts):,} "
                f"| {figures['prompt_tokens']:,} | {min(times):.2f} | {median:.2f} "
                f"| {figures['prompt_tokens'] / median / 1e6:.1f} M |"
            )
            breaks = [(b["request"], b["reason"]) for b in figures["prefix_breaks"]]
            reuse = figures["reuse"]
            notes.append(
                f"- {name}: breaks {breaks}; reuse exact {reuse['exact']}, openai "
                f"{reuse['openai']}, anthropic {reuse['anthropic']}, vllm {reuse['vllm']}; "
                f"uncached ÷ final {figures['uncached_over_final']}; directive overhead "
                f"{figures['directive_overhead']}"
            )
    body = "\n".join(
        [
            f"{args.requests} requests of one seeded session (a resumed ~100k-token history, "
            "a tool call per turn, an envelope every fourth turn, one compaction), written "
            "three ways and audited with `audit_file` (read, parse, tokenize with "
            f"{report.encoding}, four cache models, breaks); best and median of {args.runs} "
            "runs, seconds.",
            "",
            f"Machine: {machine()}.",
            "",
            "| file | format | MB | prompt tokens per request | prompt tokens | best s "
            "| median s | tokens/s |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            "Figures of the same runs (the one break is the compaction):",
            "",
            *notes,
        ]
    )
    print(body)
    kwargs = {} if args.output is None else {"path": args.output}
    write_section("Audit speed (`bench/audit_speed.py`)", body, **kwargs)


if __name__ == "__main__":
    main()
