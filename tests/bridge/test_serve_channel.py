"""``serve --channel`` and ``[server] channel`` / ``nonce``: new sessions send their envelopes
on that channel, the request log keeps the role, and ``reminder_emitted`` names it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_serve_stdio import Server

from agent_reminders import ConfigError
from agent_reminders.bridge import load_settings


def _run(tmp_path: Path, *flags: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"content": "ok"}) + "\n")
    log = tmp_path / "requests.jsonl"
    server = Server(
        "--store", "memory:", "--model", f"scripted:{script}", "--request-log", str(log), *flags,
        cwd=tmp_path,
    )  # fmt: skip
    try:
        sid = server.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})["sessionId"]
        server.call("session/remind", {"sessionId": sid, "body": "CI is red", "ttl_turns": 1})
        server.call(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        )
    finally:
        assert server.close() == 0
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    emitted = [n for n in server.notifications if n["method"] == "_session/reminder_emitted"]
    return requests, emitted


def test_serve_channel_system_sends_system_and_says_so(tmp_path: Path) -> None:
    requests, emitted = _run(tmp_path, "--channel", "system")
    assert [m["role"] for m in requests[0]["messages"]] == ["user", "system"]
    (notice,) = emitted
    assert notice["params"]["reminder"]["renderedRole"] == "system"


def test_serve_default_is_auto_and_a_scripted_model_is_no_model_known(tmp_path: Path) -> None:
    requests, emitted = _run(tmp_path)
    assert [m["role"] for m in requests[0]["messages"]] == ["user", "user"]
    assert emitted[0]["params"]["reminder"]["renderedRole"] == "user"


def test_config_channel_and_nonce(tmp_path: Path) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text('[server]\nchannel = "system"\nnonce = true\n')
    requests, _ = _run(tmp_path, "--config", str(config))
    envelope = requests[0]["messages"][-1]
    assert envelope["role"] == "system"
    assert ' nonce="' in envelope["content"]
    settings = load_settings(config, channel="user")  # the flag wins over the file
    assert (settings.channel, settings.nonce) == ("user", True)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[server]\nchannel = "developer"\n', "server.channel must be one of auto, user, system"),
        ("[server]\nnonce = 1\n", "server.nonce must be true or false"),
    ],
)
def test_bad_config_values_are_refused(tmp_path: Path, text: str, said: str) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=said):
        load_settings(config)
