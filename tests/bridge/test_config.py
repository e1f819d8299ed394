"""serve's config file (docs/protocol.md, "Running ``serve`` safely"): [server] limits and
[[tokens]] scopes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_reminders import ConfigError
from agent_reminders.bridge import load_settings


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "serve.toml"
    path.write_text(text)
    return path


def test_server_keys_and_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AR_TOKEN", "from-the-environment-123")
    path = _write(
        tmp_path,
        """
[server]
allowed_origins = ["http://localhost:5173"]
max_body_bytes = 100
max_pending_per_session = 5
rate_per_second = 200
lease_seconds = 30

[[tokens]]
token_env = "AR_TOKEN"
sessions = ["a", "b"]
max_authority = "corrective"
prompt = true

[[tokens]]
token = "an-admin-token-0123456"
admin = true
""",
    )
    settings = load_settings(path, max_iterations=3)
    assert settings.max_body_bytes == 100
    assert settings.max_pending == 5
    assert settings.max_iterations == 3
    assert settings.allowed_origins == ("http://localhost:5173",)
    limited, admin = settings.tokens
    assert limited.token == "from-the-environment-123"
    assert limited.sessions == {"a", "b"}
    assert limited.grant == "corrective"
    assert limited.can_see("a")
    assert not limited.can_see("c")
    assert admin.grant == "contract"
    assert admin.can_see("c")
    assert admin.prompt is False


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[server]\ncolour = 1\n", "server.colour"),
        ("[server]\nmax_body_bytes = 0\n", "max_body_bytes"),
        ("[extra]\n", "extra"),
        ('[[tokens]]\ntoken = "short"\n', "16 characters"),
        ('[[tokens]]\ntoken_env = "AR_UNSET_VARIABLE"\n', "AR_UNSET_VARIABLE"),
        ('[[tokens]]\ntoken = "abcdefghijklmnopq"\nadmin = "yes"\n', "admin"),
        ("not toml [", "not TOML"),
    ],
)
def test_bad_config_is_one_clear_error(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=r"serve\.toml") as info:
        load_settings(_write(tmp_path, text))
    assert fragment in str(info.value)


def test_a_tokens_default_cadence(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
[[tokens]]
token = "a-ci-token-0123456789"
cadence = { cooldown_turns = 5, max_fires = 3 }
""",
    )
    (scope,) = load_settings(path).tokens
    assert scope.cadence == {"cooldown_turns": 5, "max_fires": 3}
    # a reminder's own value wins over the token's
    paced = scope.with_cadence({"body": "x", "cooldown_turns": 1})
    assert paced == {"max_fires": 3, "body": "x", "cooldown_turns": 1}


@pytest.mark.parametrize(
    ("cadence", "fragment"),
    [
        ('"often"', "cadence must be a table"),
        ("{ every = 2 }", "unknown key(s) every; it takes first_after, cooldown_turns, max_fires"),
        ("{ cooldown_turns = 0 }", "cooldown_turns must be an int > 0"),
        ("{ first_after = -1 }", "first_after must be an int >= 0"),
    ],
)
def test_a_bad_token_cadence_is_one_error_naming_it(
    tmp_path: Path, cadence: str, fragment: str
) -> None:
    path = _write(tmp_path, f'[[tokens]]\ntoken = "a-ci-token-0123456789"\ncadence = {cadence}\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert "tokens[0].cadence" in info.value.message
    assert fragment in info.value.message
