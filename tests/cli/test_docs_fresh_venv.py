"""Every docs page's Python examples run in a fresh virtual environment that holds only what
the page tells the reader to install: ``agent-reminders`` with the extras its ``pip install``
lines name, and any other package those lines name. (``test_cli_examples.py`` runs the same
blocks in the development environment, quickly; this is the newcomer's view.)

Slow (a virtual environment per install line, from pip's cache): it runs when
``AGENT_REMINDERS_SLOW=1`` is set, as ``.ci/run`` does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(p for p in (ROOT / "docs").glob("*.md") if "```python\n" in p.read_text("utf-8"))

pytestmark = pytest.mark.skipif(
    os.environ.get("AGENT_REMINDERS_SLOW") != "1",
    reason="slow: a fresh virtual environment per docs page (set AGENT_REMINDERS_SLOW=1)",
)

# `pip install agent-reminders`, `pip install "agent-reminders[a,b]" other-package`, with the
# quotes a shell needs, in inline code or at the start of a line (after a "$ " prompt); a
# comment after # is not part of the command.
PIP_INSTALL = re.compile(r"(?:^(?:\$ )?|`)pip install ([^`\n#]+)", re.MULTILINE)
PROJECT = re.compile(r"""^["']?agent-reminders(?:\[([\w,-]+)\])?["']?$""")

# Runs each block of a page in a namespace of its own, in order, in a scratch folder.
RUNNER = """
import json, sys
for index, code in enumerate(json.loads(sys.stdin.read())):
    exec(compile(code, f"{sys.argv[1]}[{index}]", "exec"), {"__name__": "__main__"})
"""


def install_line(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The extras and other packages a page's ``pip install`` lines name (all of them)."""
    extras: set[str] = set()
    packages: set[str] = set()
    for command in PIP_INSTALL.findall(text):
        for word in command.split():
            found = PROJECT.match(word)
            if found:
                extras.update(e for e in (found.group(1) or "").split(",") if e)
            elif re.fullmatch(r"[A-Za-z0-9][\w.-]*(?:[<>=!~]=?[\w.*]+)?", word.strip("'\"")):
                packages.add(word.strip("'\""))
    return tuple(sorted(extras)), tuple(sorted(packages))


def python_blocks(text: str) -> list[str]:
    return [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout built once as a wheel (what a reader's ``pip install`` gets)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        timeout=600,
    )
    (built,) = out.glob("agent_reminders-*.whl")
    return built


Need = tuple[tuple[str, ...], tuple[str, ...]]


@pytest.fixture(scope="session")
def venvs() -> dict[Need, Path]:
    """The virtual environments made so far, by what they hold (pages share them)."""
    return {}


def make_venv(venvs: dict[Need, Path], wheel: Path, where: Path, need: Need) -> Path:
    found = venvs.get(need)
    if found is not None:
        return found
    extras, packages = need
    folder = where / ("venv-" + "-".join(extras + packages or ("core",)))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    target = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-compile", target, *packages],
        check=True,
        timeout=900,
    )  # fmt: skip
    venvs[need] = python
    return python


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_page_examples_run_with_only_what_the_page_installs(
    page: Path,
    wheel: Path,
    venvs: dict[Need, Path],
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
) -> None:
    text = page.read_text("utf-8")
    python = make_venv(venvs, wheel, tmp_path_factory.getbasetemp(), install_line(text))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(python), "-c", RUNNER, f"docs/{page.name}"],
        input=json.dumps(python_blocks(text)),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{page.name} needs {install_line(text)}:\n{done.stderr[-3000:]}"
