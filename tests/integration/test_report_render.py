"""The fleet report in a real browser: Debian's headless Chromium opens the page from disk, with
no console message (no script error, no failed load: the page fetches nothing), and its
screenshot is a real picture, not a blank or an error page.

Needs no lab: the fleet is built in the test through the real evidence store and judge
(tests/unit/fleet_fixtures.py). Chromium is part of the machine's setup (scripts/bootstrap
installs Debian's ``chromium``); without it the test fails and says so, it does not skip.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from bringup.insight.fleetdata import build
from bringup.insight.fleetreport import write

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"


def _fixtures():
    # the unit tests' fleet builder, by path: tests/unit is not a package on this test's path
    spec = importlib.util.spec_from_file_location("fleet_fixtures", REPO / "tests" / "unit" / "fleet_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fleet():
    """Nine healthy H100 nodes, one quarantined for a hot GPU, one failed on busbw."""
    ff = _fixtures()
    out = []
    for i in range(11):
        j, name, at = ff.Journal(), f"gpu-{i:02d}", ff.T0 + timedelta(hours=3 * i)
        doc = ff.agent_document(name, hot_gpu=2 if i == 3 else None, started=at)
        if i == 7:
            [nccl] = [c for c in doc["checks"] if c["name"] == "nccl"]
            nccl["metrics"]["busbw_largest_gbps"] = 431.0
        ff.burn_in_and_judge(j, name, at, raw=doc)
        last = (3 * i + 1, "quarantined") if i == 3 else (3 * i + 2, "active")
        out.append(ff.history(name, j, ((0, "planned"), (3 * i, "provisioned"), last),
                              stage="quarantined" if i == 3 else "active"))
    return build(out), ff.T0 + timedelta(days=2)


def chromium(url: str, shot: Path, profile: Path) -> list[str]:
    """Render ``url`` headless to the PNG ``shot``; the console messages Chromium logged."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail("Debian's chromium is not installed: run scripts/bootstrap (it installs the chromium package)")
    argv = [CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"), "--headless", "--no-sandbox",
            "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
            f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1400,3000", url]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=180)  # stderr below
    assert done.returncode == 0 and shot.exists(), f"no screenshot (rc {done.returncode}):\n{done.stderr[-3000:]}"
    # every console message (console.*, an uncaught error, a resource that failed to load)
    # is logged as ``...:INFO:CONSOLE:...`` (or another level) with --enable-logging
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def test_console_check_catches_a_broken_page(tmp_path):
    """The check below can fail: a script error and a failed load are seen."""
    page = tmp_path / "bad.html"
    page.write_text('<html><body><img src="missing.png"><script>undefinedFn();</script></body></html>')
    console = chromium(page.as_uri(), tmp_path / "bad.png", tmp_path / "profile")
    assert any("undefinedFn is not defined" in line for line in console), console


def test_report_renders_in_chromium(tmp_path):
    fd, at = fleet()
    index = write(tmp_path / "report", fd, at=pd.Timestamp(at), gpu_hour_usd=2.0, filters={"site": "lab"})
    page = index.read_text()
    assert "gpu-03" in page and page.count('class="faulty"') >= 2  # quarantined and failed rows
    shot = tmp_path / "shot.png"
    started = time.monotonic()
    console = chromium(index.as_uri(), shot, tmp_path / "profile")
    took = time.monotonic() - started
    assert console == [], "console messages while rendering the report:\n" + "\n".join(console)
    with Image.open(shot) as img:
        assert img.format == "PNG" and img.size == (1400, 3000), (img.format, img.size)
        rgb = img.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 20) or []
        white = sum(n for n, c in colours if c == (255, 255, 255))
    # the plots (anti-aliased lines, colour maps) give thousands of colours; a blank or an
    # error page has a handful
    assert len(colours) > 500, f"{len(colours)} distinct colours: the page looks blank"
    assert white < 0.97 * 1400 * 3000, "the screenshot is almost all white"
    print(f"chromium rendered the report in {took:.1f} s; {len(colours)} colours")
