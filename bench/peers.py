"""Our ``agent-reminders audit`` beside the peer tools that find prompt-cache misses.

Installs each peer into its own environment under ``--cache DIR`` (a venv per PyPI tool, an
``npm install --prefix`` for ccusage), builds the inputs under ``--work DIR`` and runs every tool
on every input it can take, then prints one table (tool by input: what it reported) and writes the
raw outputs to ``WORK/out/<tool>.<input>.txt``. The findings are discussed in ``bench/peers.md``.

Inputs (the same as our audit's):

- ``demo``: the request log of ``agent-reminders demo`` (30 requests, one compaction), also
  rendered as OpenAI Chat bodies for the peers that read request bodies;
- ``envelope``, ``system_prompt``, ``edit_history``, ``ephemeral_tail``: four strategies of
  ``bench/cache.py`` (200 turns, seed 7, OpenAI Chat bodies, ~43 MB each; ``--turns`` makes them
  shorter);
- ``claude``: a small hand-built Claude Code transcript with five known misses
  (``bench/_peer_inputs.py``: cold start, an 8-minute idle gap, a model switch, a compaction, a
  sub-agent's cold start), or the real transcripts given with ``--transcripts DIR`` (a folder
  holding ``projects/``).

Peers that read request bodies are given ours with a timestamp 10 s apart (no TTL effect) and no
response; peers that read only provider usage (``cache_read_input_tokens`` …) have nothing to
work on in a request-only log, and peers that read only Claude Code's transcripts are run on
``claude`` alone. Library-only peers (prefixguard, hearth-ai, ctxdiff) are driven by a small
script in their own environment: each body is handed to them as the agent would.

NOT part of ``make test`` or CI: it needs the package registries (PyPI and npm) to install the
peers the first time, and their versions move. Run by hand:

    PYTHONPATH=src:bench TIKTOKEN_CACHE_DIR=... python bench/peers.py --cache ~/.cache/peers \\
        --work /tmp/peers [--turns 200] [--only kvleak,ctxdiff] [--transcripts DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _peer_inputs import claude_code_transcript
from agent_reminders import ModelRequest
from agent_reminders.audit import audit_file
from agent_reminders.integrations import to_openai_chat

HERE = Path(__file__).resolve().parent
STRATEGIES = ("envelope", "system_prompt", "edit_history", "ephemeral_tail")
REQUEST_INPUTS = ("demo", *STRATEGIES, "switch")
INPUTS = (*REQUEST_INPUTS, "claude")


@dataclass(frozen=True)
class Peer:
    name: str  # as users cite it
    registry: str  # "pypi" or "npm"
    version: str  # the version compared
    reads: str  # what input it takes


PEERS: tuple[Peer, ...] = (
    Peer(
        "kvleak",
        "pypi",
        "0.12.0",
        "Claude Code / Codex / Gemini / OpenCode transcripts; any JSONL with usage",
    ),
    Peer("ctxdiff", "pypi", "0.5.1", "its own .ctrace, recorded by wrapping an SDK client"),
    Peer("hearth-ai", "pypi", "0.1.0", "its own trace, recorded by wrapping an SDK client"),
    Peer("claude-cache-audit", "pypi", "0.1.0", "Claude Code transcripts"),
    Peer("promptcachelint", "pypi", "0.1.0", "its own JSONL trace of {provider, body, usage, at}"),
    Peer("cachemiss", "pypi", "0.2.0", "Claude Code transcripts"),
    Peer("claude-session-diagnostics", "pypi", "1.1.0", "Claude Code transcripts"),
    Peer("cachelint", "pypi", "0.1.0a2", "raw request bodies, one a line"),
    Peer("prefixguard", "pypi", "0.2.1", "a library: observe(messages, system, tools) per request"),
    Peer("prompt-cache-doctor", "pypi", "0.2.0", "JSONL with usage (OpenAI/Anthropic/Claude Code)"),
    Peer("ccusage", "npm", "18.0.11", "Claude Code transcripts (usage and cost only)"),
)


# ---------------------------------------------------------------------------- installing


def install(peer: Peer, cache: Path) -> Path:
    """The peer's environment under ``cache``, installed when missing."""
    env = cache / peer.name
    if peer.registry == "npm":
        if not (env / "node_modules" / ".bin" / peer.name).exists():
            # 19+ needs a per-platform native package that the registry does not serve for
            # every version; 18.0.11 is the last pure-JS one.
            _run(["npm", "install", "--prefix", str(env), f"{peer.name}@{peer.version}"])
        return env
    if not (env / "bin" / "python").exists():
        _run([sys.executable, "-m", "venv", str(env)])
    probe = _run([str(env / "bin" / "python"), "-m", "pip", "show", peer.name], check=False)
    if f"Version: {peer.version}" not in probe.stdout:
        _run(
            [
                str(env / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                f"{peer.name}=={peer.version}",
            ]
        )
    return env


def _run(
    cmd: list[str],
    *,
    check: bool = True,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: int = 900,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return done


# ---------------------------------------------------------------------------- inputs


# Claude Code fixtures (``--fixtures``): input ``cc-<scenario>`` -> the request bodies it sent.
BODIES: dict[str, Path] = {}


def add_fixtures(work: Path, fixtures: Path, paths: dict[str, Path]) -> list[str]:
    """Each ``fixtures/<scenario>/`` (a project folder of transcripts beside the
    ``requests.jsonl`` the CLI sent) as input ``cc-<scenario>``."""
    names = []
    for scenario in sorted(d for d in fixtures.iterdir() if (d / "requests.jsonl").exists()):
        name = f"cc-{scenario.name}"
        root = work / "cc" / scenario.name
        root.mkdir(parents=True, exist_ok=True)
        link = root / "projects"
        if not link.exists():
            link.symlink_to(scenario.resolve(), target_is_directory=True)
        bodies = work / "logs" / f"{name}.bodies.jsonl"
        with (scenario / "requests.jsonl").open(encoding="utf-8") as src:
            rows = [json.loads(line) for line in src if line.strip()]
        bodies.write_text(
            "".join(json.dumps(r["body"]) + "\n" for r in rows if r.get("path") == "/v1/messages"),
            encoding="utf-8",
        )
        paths[name], BODIES[name] = root, bodies
        names.append(name)
    return names


def build_inputs(work: Path, turns: int, transcripts: Path | None) -> dict[str, Path]:
    """Every input: ``name -> path`` (request inputs are also rendered as ``NAME.chat.jsonl``)."""
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    demo = work / "demo" / "demo-requests.jsonl"
    if not demo.exists():
        _run(
            [sys.executable, "-m", "agent_reminders", "demo", "--out", str(demo.parent)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    paths["demo"] = demo
    chat = logs / "demo.chat.jsonl"
    with demo.open(encoding="utf-8") as src, chat.open("w", encoding="utf-8") as out:
        for line in src:
            row = json.loads(line)
            body = to_openai_chat(ModelRequest(system=row["system"], messages=row["messages"]))
            out.write(json.dumps({"model": "gpt-4.1", **body}) + "\n")
    from cache import SESSION  # bench/cache.py: the benchmark's session
    from strategies import make_script, requests_for  # bench/strategies.py

    script = make_script(turns, 7, **SESSION)
    for name in STRATEGIES:
        path = logs / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for request in requests_for(name, script):
                out.write(json.dumps({"model": "gpt-4.1", **to_openai_chat(request)}) + "\n")
        paths[name] = path
    paths["switch"] = switch_log(logs / "switch.jsonl")
    if transcripts is None:
        transcripts = work / "claude"
        claude_code_transcript(transcripts)
    paths["claude"] = transcripts
    return paths


def switch_log(path: Path) -> Path:
    """Five requests of one append-only conversation, identical but for a request parameter:
    request 2 goes to another model, request 3 lists the same tools in another order, request 4
    sets ``tool_choice``. A provider's cache misses at 2 (caches are per model) and 3; at 4,
    OpenAI keeps the prefix but Anthropic does not (``tool_choice`` is part of its cache key)."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": f"Run {n}.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
        for n in ("read", "grep", "pytest")
    ]
    system = "You are a coding agent in /work/app. " + "Follow the style guide. " * 300
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    with path.open("w", encoding="utf-8") as out:
        for i in range(5):
            messages.append({"role": "user", "content": f"Step {i}: run the tests."})
            body: dict[str, Any] = {
                "model": "gpt-4.1",
                "messages": list(messages),
                "tools": tools if i < 3 else tools[::-1],
            }
            if i == 2:
                body["model"] = "gpt-4.1-mini"
            if i == 4:
                body["tool_choice"] = "required"
            out.write(json.dumps(body) + "\n")
            messages.append({"role": "assistant", "content": f"Ran step {i}: 3 passed."})
    return path


def chat_file(paths: dict[str, Path], name: str) -> Path:
    """The input as OpenAI Chat bodies (Anthropic bodies for a Claude Code fixture)."""
    if name in BODIES:
        return BODIES[name]
    return paths[name].parent.parent / "logs" / "demo.chat.jsonl" if name == "demo" else paths[name]


def sessions(root: Path) -> list[Path]:
    """The main transcripts under a ``~/.claude``-like folder."""
    return sorted(p for p in (root / "projects").glob("*/*.jsonl") if p.name != "requests.jsonl")


# ---------------------------------------------------------------------------- our audit


def ours(paths: dict[str, Path], name: str) -> str:
    if name in BODIES:  # a fixture: the request bodies Claude Code sent
        return ours_bodies(BODIES[name])
    if name == "claude":  # the project folder: sessions and their sub-agents
        files = sessions(paths[name])
        done = _run(
            [sys.executable, "-m", "agent_reminders", "audit", "--json", str(files[0].parent)],
            check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        return done.stdout + done.stderr
    return ours_bodies(paths[name])


def ours_bodies(path: Path) -> str:
    report = audit_file(path).to_json()
    reasons: dict[str, int] = {}
    for b in report["prefix_breaks"]:
        reasons[b["reason"]] = reasons.get(b["reason"], 0) + 1
    return json.dumps({**report, "break_reasons": reasons})


def summarize_ours(text: str) -> str:
    if text.startswith("{") and "prefix_breaks" not in json.loads(text):
        billed = json.loads(text)["billed"]
        causes = ", ".join(
            f"{cause} {entry['tokens']:,} tok ${entry['cost']:.3f}"
            for cause, entry in billed["causes"].items()
        )
        return f"{len(billed['misses'])} misses: {causes or '-'}"
    if text.startswith("{"):
        r = json.loads(text)
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(r["break_reasons"].items())) or "-"
        return (
            f"{len(r['prefix_breaks'])} breaks ({reasons}); reuse exact "
            f"{r['reuse']['exact']:.3f} / anthropic {r['reuse']['anthropic']:.3f}; "
            f"uncached÷final {r['uncached_over_final']}; cost ratio anthropic "
            f"{r['cost_ratio']['anthropic']}"
        )
    return "not read: " + text.strip().splitlines()[-1][:90]


# ---------------------------------------------------------------------------- drivers

# Each driver is run by the peer's own interpreter: argv[1] = the OpenAI Chat bodies, argv[2] =
# a scratch folder. It prints what the peer reported.
PROMPTCACHELINT = """
import json, sys
import promptcachelint
from pathlib import Path
trace = Path(sys.argv[2]) / "trace.jsonl"
trace.unlink(missing_ok=True)
rec = promptcachelint.Recorder(promptcachelint.JsonlSink(trace), keep=0)
with open(sys.argv[1], encoding="utf-8") as f:
    for i, line in enumerate(f):
        # one explicit session (the tool's own advice for production); its automatic grouping
        # takes a compaction for a new conversation and reports no break there
        rec.record(sys.argv[3], json.loads(line), at=1_700_000_000 + 10 * i, session_id="s")
print(trace)
"""
PREFIXGUARD = """
import json, sys, collections
from prefixguard import PrefixGuard
guard, broken, causes, lost = PrefixGuard(), 0, collections.Counter(), 0
first = []
with open(sys.argv[1], encoding="utf-8") as f:
    for i, line in enumerate(f):
        body = json.loads(line)
        msgs = body["messages"]
        if sys.argv[3] == "anthropic":
            system, rest = body.get("system"), msgs
        else:
            lead = [m for m in msgs if m["role"] in ("system", "developer")][:1]
            system, rest = (lead[0]["content"] if lead else None), msgs[len(lead):]
        r = guard.observe(rest, system=system, tools=body.get("tools"), session="s")
        if r.broken:
            broken += 1
            lost += r.invalidated_tokens
            for fd in r.findings:
                causes[fd.cause] += 1
            if len(first) < 3:
                first.append(f"req {i}: {r.divergence_block} ~tok {r.divergence_token_offset}: "
                             + ",".join(fd.cause for fd in r.findings))
print(json.dumps({"broken": broken, "causes": causes, "invalidated_tokens": lost, "first": first}))
"""
HEARTH = """
import json, sys, os, collections
os.environ["HEARTH_HOME"] = sys.argv[2]
import hearth
from hearth.trace import TraceRecorder

from hearth.testing import OpenAIChoice, OpenAIMessage, OpenAIResponse, OpenAIUsage

class ChatCompletions:  # hearth tells the provider from this class's name
    __module__ = "openai.resources.chat.completions"
    def create(self, **kw):
        # all cached: no provider miss, only what hearth sees in the payload
        usage = OpenAIUsage(1000, 1, 1001, {"cached_tokens": 1000})
        return OpenAIResponse("r", [OpenAIChoice(OpenAIMessage("ok"))], usage)
class Chat:
    __module__ = "openai.resources.chat"
    def __init__(self): self.completions = ChatCompletions()
class Client:
    __module__ = "openai"
    def __init__(self): self.chat = Chat()

import shutil
shutil.rmtree(os.path.join(sys.argv[2], "traces"), ignore_errors=True)
recorder = TraceRecorder(os.path.join(sys.argv[2], "traces"))
client = hearth.wrap(Client(), mode="safe", recorder=recorder)
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        body = json.loads(line)
        body["model"] = "gpt-4o"  # hearth prices only the models of its table
        client.chat.completions.create(**body, session_id="s")
causes, first = collections.Counter(), []
for line in open(os.path.join(sys.argv[2], "traces", "s.jsonl"), encoding="utf-8"):
    call = json.loads(line)
    for b in call.get("breaks", []):
        causes[b["cause"]] += 1
        if len(first) < 3:
            first.append(f"call {call['call']}: {b['cause']} ({b['level']}): {b['details'][:80]}")
print(json.dumps({"breaks": sum(causes.values()), "causes": causes, "first": first}))
"""
CTXDIFF = """
import json, sys, os, glob
from ctxdiff import trace

class Usage:
    def __init__(self): self.prompt_tokens, self.completion_tokens, self.total_tokens = 0, 1, 1
class Resp:
    def __init__(self): self.usage = Usage()
class Completions:
    def create(self, **kw): return Resp()
class Chat:
    def __init__(self): self.completions = Completions()
class Client:
    __module__ = "openai"
    def __init__(self): self.chat = Chat()

os.chdir(sys.argv[2])
for old in glob.glob("*.ctrace"):
    os.remove(old)
tracer = trace.init("peer")
client = tracer.wrap(Client())
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        client.chat.completions.create(**json.loads(line))
tracer.close()
print(glob.glob(os.path.join(sys.argv[2], "*.ctrace"))[0])
"""


def _driver(env: Path, source: str, body: Path, scratch: Path, provider: str = "openai") -> str:
    scratch.mkdir(parents=True, exist_ok=True)
    script = textwrap.dedent(source)
    done = _run(
        [str(env / "bin" / "python"), "-c", script, str(body), str(scratch), provider],
        check=False,
        timeout=3000,
    )
    if done.returncode:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
    return done.stdout.strip().splitlines()[-1]


def _bin(env: Path, name: str) -> str:
    return str(env / "bin" / name)


def run_peer(peer: Peer, env: Path, paths: dict[str, Path], name: str, scratch: Path) -> str:
    """The peer's raw output on one input ("n/a: …" when it cannot take it)."""
    home = {**os.environ, "HOME": str(scratch / "home"), "NO_COLOR": "1"}
    (scratch / "home").mkdir(parents=True, exist_ok=True)
    claude = name == "claude" or name in BODIES
    root = paths[name] if claude else paths["claude"]
    projects = str(root / "projects")

    def cli(*cmd: str, env_: dict[str, str] = home) -> str:
        done = _run(list(cmd), check=False, env=env_, timeout=3000)
        return f"exit {done.returncode}\n{done.stdout}{done.stderr}"

    p = peer.name
    if p == "kvleak":
        if claude:
            return cli(
                _bin(env, "kvleak"), "audit", "--path", projects, "--json", "--min-miss", "1000"
            )
        return cli(
            _bin(env, "kvleak"),
            "audit",
            "--path",
            str(chat_file(paths, name)),
            "--format",
            "generic",
            "--json",
            "--min-miss",
            "1000",
        )
    if p == "claude-cache-audit":
        if not claude:
            return "n/a: reads Claude Code transcripts only"
        return cli(_bin(env, p), "--all", "--config-dir", str(root), "--json") + cli(
            _bin(env, p), "--all", "--config-dir", str(root), "rebuilds"
        )
    if p == "cachemiss":
        if not claude:
            return "n/a: reads Claude Code transcripts only"
        return cli(_bin(env, p), "--root", projects, "ledger", "--since", "all", "--json")
    if p == "claude-session-diagnostics":
        if not claude:
            return "n/a: reads Claude Code transcripts only"
        csd = [_bin(env, "csd"), "--root", projects, "--ttl", "5"]
        return "".join(cli(*csd, sub) for sub in ("summary", "cold", "misses")) + cli(
            *csd, "trace", sessions(root)[0].stem[:8], "--include-subagents"
        )
    if p == "ccusage":
        if not claude:
            return "n/a: reads Claude Code transcripts only"
        bin_ = str(env / "node_modules" / ".bin" / "ccusage")
        return cli(
            bin_, "session", "--offline", "--json", env_={**home, "CLAUDE_CONFIG_DIR": str(root)}
        )
    if p == "prompt-cache-doctor":
        target = sessions(root)[0] if claude else chat_file(paths, name)
        return cli(_bin(env, "pcd"), "analyze", str(target), "--model", "sonnet", "--json")
    provider = "anthropic" if name in BODIES else "openai"
    if name == "claude" or (name in BODIES and p in ("hearth-ai", "ctxdiff")):
        return "n/a: reads request bodies, and a transcript holds none (no system prompt, no tools)"
    body = chat_file(paths, name)
    if p == "cachelint":
        return cli(_bin(env, p), "analyze", str(body), "--provider", provider)
    if p == "promptcachelint":
        trace = _driver(env, PROMPTCACHELINT, body, scratch / "pcl", provider)
        return cli(_bin(env, p), "report", trace, "--json")
    if p == "prefixguard":
        return _driver(env, PREFIXGUARD, body, scratch / "pg", provider)
    if p == "hearth-ai":
        return _driver(env, HEARTH, body, scratch / "hearth")
    if p == "ctxdiff":
        ctrace = _driver(env, CTXDIFF, body, scratch / "ctxdiff")
        return cli(_bin(env, p), "cache", "--project", ctrace)
    return "n/a"


# ---------------------------------------------------------------------------- summaries


def _json_after_exit(text: str) -> Any:
    body = text.split("\n", 1)[1] if text.startswith("exit ") else text
    start = body.find("{")
    return json.JSONDecoder().raw_decode(body[start:])[0] if start >= 0 else None


def _k(n: float) -> str:
    return f"{n / 1000:.1f}k"


def _kvleak(text: str) -> str:
    d = _json_after_exit(text)
    causes = {
        k: f"{v['count']}x{_k(v['rebuilt'])} ${v['penalty_usd']:.3f}"
        for k, v in d["buckets"].items()
        if v["count"]
    }
    return (
        f"{d['steps']} calls, hit {d['hit_rate']:.1%}; misses {causes or 'none'}; "
        f"leak ${d['leak_usd']:.2f} of input ${d['cost_usd']:.2f}; "
        f"api_diagnosed {d['api_diagnosed']}"
    )


def _cca(text: str) -> str:
    d = _json_after_exit(text)
    r = d["rebuilds"]
    causes = {
        k: v
        for k, v in r.items()
        if isinstance(v, dict) and "premium" in v and k not in ("post_rule", "headline")
    }
    lines = [ln.split() for ln in text.split("rebuilds", 1)[-1].splitlines()]
    named = [f"{ln[5]}" for ln in lines if len(ln) > 8 and ln[0][:2].isdigit()]
    return (
        f"{d['totals']['requests']} requests ${d['totals']['cost']}; cold starts "
        f"{r['cold_starts']['count']}; rebuilds {named}; compactions {d['compactions']}; "
        f"by cause {json.dumps(causes)[:120]}"
    )


def _cachemiss(text: str) -> str:
    d = _json_after_exit(text)
    rebuilds = [
        f"{r['reason']} {_k(r['rebuilt_tokens'])} ${r['premium']:.3f}" for r in d["rebuilds"]
    ]
    colds = [f"{c['kind']} {_k(c['written'])}" for c in d["cold_starts"]]
    return (
        f"{d['calls']} calls, hit {d['hit_rate']:.1%}; rebuilds {rebuilds}; cold {colds}; "
        f"API diagnostics on {d['diagnostics_present']}"
    )


def _csd(text: str) -> str:
    keep = (
        "Requests ",
        "Total cost",
        "Cache hit rate",
        "Mid-session restarts",
        "Cold-restart premium",
        "cold starts rebuilding",
        "Misses reported",
    )
    lines = [
        re.sub(r"\s+", " ", ln.strip()) for ln in text.splitlines() if ln.strip().startswith(keep)
    ]
    section = text.split("cold starts rebuilding")[-1].split("cost    what")[0]
    colds = [
        re.sub(r"\s+", " ", ln.strip())
        for ln in section.splitlines()
        if re.match(r"\s*20\d\d-", ln)
    ]
    return "; ".join(lines) + "; cold: " + " / ".join(colds)


def _ccusage(text: str) -> str:
    d = _json_after_exit(text)
    t = d["totals"]
    return (
        f"sessions {len(d['sessions'])}; read {t['cacheReadTokens']:,} written "
        f"{t['cacheCreationTokens']:,}; cost ${t['totalCost']:.2f} (no misses, no causes)"
    )


def _pcd(text: str) -> str:
    d = _json_after_exit(text)
    return (
        f"{d['total_requests']} requests; cached {d['total_cached_tokens']:,} of "
        f"{d['total_input_tokens']:,} (hit {d['overall_hit_ratio']}); "
        f"cost ${d['cost_actual_usd']}; "
        f"potential extra saving ${d['potential_extra_savings_usd']}"
    )


def _pcl(text: str) -> str:
    d = _json_after_exit(text)
    codes: dict[str, int] = {}
    first: list[str] = []
    for sess in d["sessions"]:
        for req in sess["requests"]:
            for f in req["findings"]:
                codes[f["code"]] = codes.get(f["code"], 0) + 1
                if f["code"] in ("CL001", "CL002", "CL003", "CL004", "CL007") and len(first) < 2:
                    first.append(
                        f"req {req['index']} {f['code']} {f.get('path')}: {f['message'][:70]}"
                    )
    t = d["totals"]
    return (
        f"{len(d['sessions'])} session(s); breaks {t['breaks']}, "
        f"lost ~{t['lost_tokens_estimate']:,} "
        f"tok (est.); findings {dict(sorted(codes.items()))}; {' | '.join(first)}"
    )


def _ctxdiff(text: str) -> str:
    warnings: dict[str, int] = {}
    for m in re.finditer(r"⚠ warning: \[([^\]]+)\] breaks the prefix on (\d+)/", text):
        warnings[m.group(1)] = warnings.get(m.group(1), 0) + int(m.group(2))
    keep = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip().startswith(("✓", "stable prefix", "re-billed", "modified"))
    ][:3]
    return f"prefix-break warnings {warnings or 0}; " + " | ".join(keep)[:200]


def _cachelint(text: str) -> str:
    keep = ("Requests:", "Prompt status:", "First divergence:", "Stable prefix estimate:", "  - ")
    kept = " | ".join(ln.strip() for ln in text.splitlines() if ln.startswith(keep))
    return (kept or text.strip().splitlines()[-1])[:240]


def _library(text: str) -> str:
    return text.strip()[:240]


SUMMARIES: dict[str, Callable[[str], str]] = {
    "kvleak": _kvleak,
    "claude-cache-audit": _cca,
    "cachemiss": _cachemiss,
    "claude-session-diagnostics": _csd,
    "ccusage": _ccusage,
    "prompt-cache-doctor": _pcd,
    "promptcachelint": _pcl,
    "ctxdiff": _ctxdiff,
    "cachelint": _cachelint,
    "prefixguard": _library,
    "hearth-ai": _library,
}


def summarize(peer: str, text: str) -> str:
    if text.startswith("n/a"):
        return text
    try:
        if peer in SUMMARIES:
            return SUMMARIES[peer](text)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        pass
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("exit ")]
    return (" | ".join(lines[:3]) if lines else text.strip())[:160]


# ---------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="where the peers are installed")
    parser.add_argument("--work", type=Path, required=True, help="inputs and raw outputs")
    parser.add_argument("--turns", type=int, default=200, help="bench/cache.py's session length")
    parser.add_argument("--only", default="", help="comma-separated peers (default: all)")
    parser.add_argument("--inputs", default=",".join(INPUTS), help="comma-separated inputs")
    parser.add_argument("--transcripts", type=Path, help="a ~/.claude-like folder to use")
    parser.add_argument(
        "--fixtures",
        type=Path,
        help="Claude Code fixtures: scenario folders of transcripts + requests.jsonl",
    )
    args = parser.parse_args()
    only = {s for s in args.only.split(",") if s}
    chosen = [p for p in PEERS if not only or p.name in only]
    inputs = [s for s in args.inputs.split(",") if s]
    args.cache.mkdir(parents=True, exist_ok=True)
    out = args.work / "out"
    out.mkdir(parents=True, exist_ok=True)
    paths = build_inputs(args.work, args.turns, args.transcripts)
    if args.fixtures:
        inputs += add_fixtures(args.work, args.fixtures, paths)
    rows: list[tuple[str, str, str, float]] = []
    for name in inputs:
        start = time.perf_counter()
        text = ours(paths, name)
        (out / f"ours.{name}.txt").write_text(text, encoding="utf-8")
        rows.append(("ours (audit)", name, summarize_ours(text), time.perf_counter() - start))
    for peer in chosen:
        try:
            env = install(peer, args.cache)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            rows.extend((peer.name, n, f"not installed: {str(exc)[:100]}", 0.0) for n in inputs)
            continue
        for name in inputs:
            start = time.perf_counter()
            try:
                text = run_peer(peer, env, paths, name, args.work / "scratch" / peer.name / name)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                text = f"failed: {exc}"
            (out / f"{peer.name}.{name}.txt").write_text(text, encoding="utf-8")
            rows.append((peer.name, name, summarize(peer.name, text), time.perf_counter() - start))
            print(f"{peer.name:28} {name:15} {rows[-1][3]:6.1f}s", file=sys.stderr)
    width = max(len(r[0]) for r in rows)
    print(f"{'tool':{width}}  {'input':15} {'secs':>6}  reported")
    for tool, name, summary, secs in rows:
        flat = re.sub(r"\s+", " ", summary)
        print(f"{tool:{width}}  {name:15} {secs:6.1f}  {flat}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
