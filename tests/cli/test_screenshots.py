"""The screenshots in the docs, made by the test suite so that they show what the code makes today.

``docs/img/site-home.png`` is the docs site's home page (``mkdocs build`` into a scratch folder)
and ``docs/img/demo-report.png`` the top of the HTML audit report that ``agent-reminders demo``
writes; each is taken by headless Chromium (Debian's ``chromium``) at a fixed window size.

The slow test (``AGENT_REMINDERS_SLOW=1``, which ``.ci/run`` sets) builds both pages, takes the
screenshots, checks that each is a real picture of a page (a PNG of the window's size, many
colours, not one colour nearly everywhere) and writes it into ``docs/img/`` when its bytes
changed: every run of ``make test`` with the slow tests leaves images that show the current
site and report, and ``git status`` shows when one moved. Where Chromium is missing, the test
installs it with ``apt-get`` (as root, or through ``sudo -n``) and fails, saying what to install,
where it cannot. The quick test checks, on every run, that the images are there, are PNGs of
the expected size and are shown by the pages that should show them.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_process import run

ROOT = Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"
SLOW = os.environ.get("AGENT_REMINDERS_SLOW") == "1"

# Debian's packages: the browser, and the fonts the pages fall back to (Helvetica and Arial
# become Liberation Sans), so that a fresh machine draws the same glyphs as the images'.
APT_PACKAGES = ("chromium", "fonts-liberation")


@dataclass(frozen=True)
class Shot:
    """One screenshot: its file in docs/img/, the window it is taken in, the pages showing it."""

    name: str
    width: int
    height: int
    shown_in: tuple[str, ...]


# 1240 px: the site's navigation sidebar appears from 1220 px on. 1070 px of the report: the
# summary cards, the table of cache models and the first chart with its legend.
SITE_HOME = Shot("site-home.png", 1240, 760, ("README.md",))
DEMO_REPORT = Shot("demo-report.png", 1200, 1070, ("docs/audit.md", "docs/demo.md"))
SHOTS = (SITE_HOME, DEMO_REPORT)


def png_size(data: bytes) -> tuple[int, int]:
    """The width and height in a PNG's header (its IHDR chunk, first after the signature)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR", "a PNG without IHDR first"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


# -- quick: on every run ---------------------------------------------------------------------


@pytest.mark.parametrize("shot", SHOTS, ids=lambda s: s.name)
def test_the_screenshots_are_there_and_shown(shot: Shot) -> None:
    data = (IMG / shot.name).read_bytes()
    assert png_size(data) == (shot.width, shot.height)
    assert 20_000 < len(data) < 400_000, len(data)
    for page in shot.shown_in:
        text = (ROOT / page).read_text(encoding="utf-8")
        link = f"docs/img/{shot.name}" if page == "README.md" else f"img/{shot.name}"
        assert f"]({link})" in text, f"{page} does not show {link}"


# -- slow: the screenshots themselves -------------------------------------------------------


def _install_command() -> list[str] | None:
    """How this machine can install Debian's packages: as root, or through ``sudo -n``."""
    if shutil.which("apt-get") is None:
        return None
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], check=False).returncode == 0:
        return ["sudo", "-n"]
    return None


def chromium() -> str:
    """Debian's Chromium, installed with apt-get when it is missing and the machine allows it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    how = f"apt-get install {' '.join(APT_PACKAGES)}"
    prefix = _install_command()
    if prefix is None:
        pytest.fail(
            f"no chromium on PATH and no way to install it here (apt-get as root, or sudo -n): "
            f"run `{how}`, or leave AGENT_REMINDERS_SLOW unset to skip the screenshots"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=300"]
    for command in (
        [*prefix, "apt-get", *lock, "update", "-q"],
        [*prefix, "apt-get", *lock, "install", "-y", "-q", *APT_PACKAGES],
    ):
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=1200, check=False
        )
        if done.returncode != 0:
            pytest.fail(
                f"chromium is missing and `{' '.join(command)}` failed "
                f"(exit {done.returncode}); run `{how}` by hand:\n{done.stderr[-2000:]}"
            )
    found = shutil.which("chromium")
    if found is None:
        pytest.fail(f"`{how}` ran but no chromium is on PATH")
    return found


def screenshot(browser: str, page: Path, shot: Shot, folder: Path) -> bytes:
    """A screenshot of ``page`` (a local file) in a window of ``shot``'s size."""
    out = folder / shot.name
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",  # the tests run as root on CI
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--no-first-run",
            f"--user-data-dir={folder / 'profile'}",
            f"--window-size={shot.width},{shot.height}",
            f"--screenshot={out}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert out.is_file(), done.stderr[-3000:]
    return out.read_bytes()


def check_picture(data: bytes, shot: Shot) -> None:
    """A PNG of the window's size that shows a page: many colours, none nearly everywhere."""
    try:
        from PIL import Image
    except ImportError:
        pytest.fail("Pillow is missing: pip install -e '.[dev]' (the [dev] extra has it)")
    import io

    assert png_size(data) == (shot.width, shot.height)
    assert len(data) > 20_000, f"{shot.name}: {len(data)} bytes, too small for a page"
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG"
        colors = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colors is not None  # more than 2**20 colours would be no page either
    assert len(colors) > 200, f"{shot.name}: only {len(colors)} colours: a blank page?"
    most = max(count for count, _ in colors)
    assert most < 0.97 * shot.width * shot.height, f"{shot.name}: one colour nearly everywhere"


def keep(data: bytes, shot: Shot) -> None:
    """Write the screenshot into docs/img/ when it differs from the one there."""
    path = IMG / shot.name
    if not path.is_file() or path.read_bytes() != data:
        IMG.mkdir(exist_ok=True)
        path.write_bytes(data)
        print(f"updated {path.relative_to(ROOT)}")


@pytest.mark.skipif(
    not SLOW, reason="slow: builds the site, runs the demo, runs Chromium (AGENT_REMINDERS_SLOW=1)"
)
def test_the_screenshots_show_the_site_and_the_report_as_they_are(tmp_path: Path) -> None:
    browser = chromium()
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    demo = run("demo", cwd=tmp_path)
    assert demo.code == 0, demo.err
    report = tmp_path / ".agent-reminders" / "demo" / "demo-report.html"
    shots = tmp_path / "shots"
    shots.mkdir()
    for page, shot in ((site / "index.html", SITE_HOME), (report, DEMO_REPORT)):
        data = screenshot(browser, page, shot, shots)
        check_picture(data, shot)
        keep(data, shot)
