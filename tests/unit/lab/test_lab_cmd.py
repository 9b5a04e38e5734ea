"""``bringup lab status``: every path printed whole, however narrow the console (the lab
replaced by its status rows: no service is started or asked)."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from bringup_cli import app
from bringup_cli import lab as lab_cmd

LONG = "/home/operator/.local/share/bringup-lab/with/a/rather/deep/folder/secrets/postgres-password"


class FakeLab:
    def __init__(self, rows):
        self.rows = rows

    def status(self):
        return self.rows


def status(monkeypatch, rows, width=40):
    out = io.StringIO()
    monkeypatch.setattr(lab_cmd, "console", Console(file=out, width=width, force_terminal=False, color_system=None))
    monkeypatch.setattr(lab_cmd, "_lab", lambda *a, **k: FakeLab(rows))
    result = CliRunner().invoke(app, ["lab", "status"])
    return result, out.getvalue()


ROWS = [
    {"service": "postgresql", "up": True, "url": "postgresql://bringup@127.0.0.1:5433/bringup", "credentials": LONG},
    {"service": "netbox", "up": True, "url": "http://127.0.0.1:8000",
     "credentials": f"user admin: {LONG}-admin; API token: {LONG}-token"},
    {"service": "redis", "up": True, "url": "redis://127.0.0.1:6380", "credentials": "-"},
    {"service": "bmcsim", "up": None, "url": "-", "credentials": "not built yet"},
]


def test_long_paths_are_printed_whole_in_a_narrow_console(monkeypatch):
    result, text = status(monkeypatch, ROWS, width=40)
    assert result.exit_code == 0, result.output
    lines = text.splitlines()
    assert f"  postgresql: {LONG}" in lines  # on one line, not cut with "…" nor folded
    assert f"  netbox: user admin: {LONG}-admin; API token: {LONG}-token" in lines
    assert "…" not in text
    assert not [line for line in lines if line.startswith(("  redis:", "  bmcsim:"))]


def test_a_service_not_built_says_so_in_its_state(monkeypatch):
    _, text = status(monkeypatch, ROWS, width=120)
    [bmcsim] = [line for line in text.splitlines() if "bmcsim" in line]
    assert "n/a (not built yet)" in bmcsim  # a reason, not listed as where credentials are


def test_a_service_down_is_exit_1(monkeypatch):
    result, text = status(monkeypatch, [{**ROWS[0], "up": False}], width=120)
    assert result.exit_code == 1 and "down" in text
