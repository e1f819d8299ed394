"""The inputs of ``bench/peers.py``: our demo's request log, four strategies of ``bench/cache.py``
and a small hand-built Claude Code transcript with known cache misses.

The transcript is shaped like the files Claude Code 2.0 keeps under
``~/.claude/projects/<project>/<session>.jsonl`` (user / assistant / system entries chained by
``parentUuid``, one assistant entry per content block of a response, all carrying that
response's ``message.id``, ``requestId`` and ``usage``) plus one sub-agent file under
``<session>/subagents/``. Its figures are chosen so that every miss has one known cause:

| call | when | what happens | read | written |
|---|---|---|---|---|
| 1 | 0 s | new session, cold start | 0 | 16,000 |
| 2-5 | every 20 s | warm; call 3 starts a sub-agent (Task) | prefix | new turn |
| 6 | 8 min after call 5 | idle gap past the 5-minute TTL | 0 | 24,100 |
| 7 | +20 s | warm | 24,100 | 1,500 |
| 8 | +20 s | ``/model`` switch to Opus: a new model has no cache | 0 | 25,900 |
| 9 | +20 s | warm (Opus) | 25,900 | 800 |
| 10 | after a ``compact_boundary`` | the summary replaces the history | 15,400 | 3,900 |
| 11 | +20 s | warm | 19,300 | 700 |
| sub 1-3 | in call 3 | a sub-agent, cold then warm | 0, 9,800, 10,900 | 9,800, 1,100, 600 |

Timestamps are laid relative to ``anchor`` (tools that look at "the last 30 days" by default
must see them), everything else is fixed.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SONNET = "claude-sonnet-4-5-20250929"
OPUS = "claude-opus-4-1-20250805"
SESSION = "7c1e2a4b-5d3f-4e8a-9b0c-1f2e3d4c5b6a"
AGENT = "a3f9c2e1"
CWD = "/work/app"
PROJECT = "-work-app"

# (seconds after the first prompt, model, read, written, output, blocks, event before the call)
CALLS: tuple[tuple[int, str, int, int, int, tuple[str, ...], str], ...] = (
    (0, SONNET, 0, 16_000, 180, ("text", "tool_use"), "prompt"),
    (20, SONNET, 16_000, 1_200, 220, ("tool_use",), "tool_result"),
    (40, SONNET, 17_200, 2_500, 310, ("text", "task"), "tool_result"),
    (100, SONNET, 19_700, 900, 150, ("tool_use",), "task_result"),
    (120, SONNET, 20_600, 3_100, 420, ("thinking", "text", "tool_use"), "tool_result"),
    (600, SONNET, 0, 24_100, 260, ("text", "tool_use"), "prompt"),  # 8 min idle
    (620, SONNET, 24_100, 1_500, 200, ("text",), "tool_result"),
    (660, OPUS, 0, 25_900, 340, ("text", "tool_use"), "model_switch"),
    (680, OPUS, 25_900, 800, 180, ("text",), "tool_result"),
    (760, OPUS, 15_400, 3_900, 240, ("text", "tool_use"), "compact"),
    (780, OPUS, 19_300, 700, 120, ("text",), "tool_result"),
)
SUBAGENT_CALLS: tuple[tuple[int, int, int, int], ...] = (
    (45, 0, 9_800, 260),
    (60, 9_800, 1_100, 300),
    (80, 10_900, 600, 410),
)
# Expected by construction: the misses a tool should name.
KNOWN_MISSES = (
    "call 1 new-session cold start (16,000 written)",
    "call 6 idle gap 8 min > 5-min TTL (read 20,600 -> 0, 24,100 written)",
    "call 8 model switch sonnet -> opus (read 24,100 -> 0, 25,900 written)",
    "call 10 after compact_boundary (read 25,900 -> 15,400, 3,900 written)",
    "sub-agent call 1 cold start (9,800 written)",
)


def _ts(anchor: datetime, seconds: float) -> str:
    return (anchor + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.") + "000Z"


class _Writer:
    def __init__(self, anchor: datetime, *, sidechain: bool, agent: str | None) -> None:
        self.anchor = anchor
        self.sidechain = sidechain
        self.agent = agent
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.n = 0

    def _uuid(self) -> str:
        self.n += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{SESSION}/{self.agent}/{self.n}"))

    def entry(self, kind: str, seconds: float, **fields: Any) -> dict[str, Any]:
        me = self._uuid()
        line: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": CWD,
            "sessionId": SESSION,
            "version": "2.0.14",
            "gitBranch": "main",
        }
        if self.agent:
            line["agentId"] = self.agent
        line.update({"type": kind, **fields, "uuid": me, "timestamp": _ts(self.anchor, seconds)})
        self.lines.append(line)
        self.parent = me
        return line

    def user(self, seconds: float, content: Any, **extra: Any) -> None:
        self.entry("user", seconds, message={"role": "user", "content": content}, **extra)

    def assistant(
        self, seconds: float, call: int, model: str, usage: dict[str, Any], blocks: tuple[str, ...]
    ) -> list[str]:
        """One API response, written as Claude Code does: one entry per content block."""
        msg_id = f"msg_01{self.agent or 'main'}{call:04d}Xq7Lp2"
        request_id = f"req_011C{self.agent or 'main'}{call:04d}Vz"
        tool_ids = []
        for i, block in enumerate(blocks):
            if block == "thinking":
                content = {
                    "type": "thinking",
                    "thinking": "The loader drops empty keys…",
                    "signature": "EqQBCkYIBxgCKkB" + "A" * 40,
                }
            elif block == "text":
                content = {"type": "text", "text": f"Step {call}: checking the loader."}
            else:
                tid = f"toolu_01{self.agent or 'main'}{call:03d}{i}"
                tool_ids.append(tid)
                if block == "task":
                    content = {
                        "type": "tool_use",
                        "id": tid,
                        "name": "Task",
                        "input": {
                            "description": "Find callers",
                            "prompt": "List every caller of load_config.",
                            "subagent_type": "general-purpose",
                        },
                    }
                else:
                    content = {
                        "type": "tool_use",
                        "id": tid,
                        "name": "Bash",
                        "input": {
                            "command": "pytest -q tests/test_config.py",
                            "description": "Run the config tests",
                        },
                    }
            self.entry(
                "assistant",
                seconds + 3 + i * 0.4,
                message={
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [content],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
                requestId=request_id,
            )
        return tool_ids


def _usage(read: int, written: int, output: int) -> dict[str, Any]:
    return {
        "input_tokens": 6,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output,
        "service_tier": "standard",
    }


def claude_code_transcript(root: Path, anchor: datetime | None = None) -> Path:
    """Write the transcript under ``root/projects/-work-app/`` (``root`` stands for
    ``~/.claude``); return the session file."""
    if anchor is None:
        now = datetime.now(UTC).replace(microsecond=0)
        anchor = now - timedelta(hours=3)
    main = _Writer(anchor, sidechain=False, agent=None)
    sub = _Writer(anchor, sidechain=True, agent=AGENT)
    pending: list[str] = []
    for call, (t, model, read, written, output, blocks, event) in enumerate(CALLS, start=1):
        if event == "prompt":
            text = "The config loader drops keys with empty values; find out why and fix it."
            if call > 1:
                text = "Back. Now make the loader keep empty strings but drop None."
            main.user(t, text)
        elif event == "model_switch":
            main.user(
                t - 5,
                "<command-name>/model</command-name>\n<command-message>model"
                "</command-message>\n<command-args>opus</command-args>",
                isMeta=False,
            )
            main.user(
                t - 4,
                "<local-command-stdout>Set model to opus (claude-opus-4-1-20250805)"
                "</local-command-stdout>",
            )
            main.user(t, "Review the fix for edge cases.")
        elif event == "compact":
            boundary = main.entry(
                "system",
                t - 10,
                subtype="compact_boundary",
                content="Conversation compacted",
                isMeta=False,
                level="info",
                compactMetadata={"trigger": "manual", "preTokens": 26_700},
            )
            boundary["parentUuid"] = None
            boundary["logicalParentUuid"] = main.lines[-2]["uuid"]
            main.user(
                t - 2,
                "This session is being continued from a previous conversation that ran out of "
                "context. The conversation is summarized below:\nAnalysis: the loader filtered "
                "falsy values; fixed to drop only None; tests pass.",
                isVisibleInTranscriptOnly=True,
                isCompactSummary=True,
            )
        else:  # the results of the previous call's tools
            results = [
                {
                    "tool_use_id": tid,
                    "type": "tool_result",
                    "content": "3 passed, 1 failed"
                    if event == "tool_result"
                    else "load_config is called from cli.py:41 and server.py:88.",
                }
                for tid in pending
            ]
            main.user(
                t - 1, results, toolUseResult={"stdout": "…", "stderr": "", "interrupted": False}
            )
        pending = main.assistant(t, call, model, _usage(read, written, output), blocks)
        if "task" in blocks:
            sub.user(CALLS[call - 1][0] + 4, "List every caller of load_config.")
            for i, (st, sread, swritten, sout) in enumerate(SUBAGENT_CALLS, start=1):
                if i > 1:
                    sub.user(
                        st - 1,
                        [
                            {
                                "tool_use_id": f"toolu_01{AGENT}{i - 1:03d}0",
                                "type": "tool_result",
                                "content": "cli.py:41",
                            }
                        ],
                    )
                sub.assistant(
                    st,
                    i,
                    SONNET,
                    _usage(sread, swritten, sout),
                    ("tool_use",) if i < len(SUBAGENT_CALLS) else ("text",),
                )
    folder = root / "projects" / PROJECT
    (folder / SESSION / "subagents").mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in main.lines), encoding="utf-8")
    sub_path = folder / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    sub_path.write_text("".join(json.dumps(line) + "\n" for line in sub.lines), encoding="utf-8")
    return path
