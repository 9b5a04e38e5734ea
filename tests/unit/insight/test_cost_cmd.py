"""``bringup cost``: the ledger table printed from fleet data (NetBox replaced by built tables)."""

from __future__ import annotations

from datetime import timedelta

from fleet_fixtures import T0, history
from typer.testing import CliRunner

from bringup.insight.fleetdata import build
from bringup.settings import Settings
from bringup_cli import app, cost_cmd

FLEET = [history("a", steps=((0, "planned"), (2, "provisioned"), (4, "quarantined"))),
         history("b", steps=((0, "planned"), (2, "provisioned"), (4, "active")))]


def run(monkeypatch, *args: str):
    seen = {}

    def fleet(config, site, rack):
        seen.update(site=site, rack=rack)
        return Settings(netbox_url="http://nb", netbox_token_file="/dev/null", gpu_hour_usd=3.0), build(FLEET)
    monkeypatch.setattr(cost_cmd, "_fleet", fleet)
    result = CliRunner().invoke(app, ["cost", *args], env={"COLUMNS": "250"})
    return result, seen


def test_cost_table(monkeypatch):
    at = (T0 + timedelta(hours=10)).isoformat()
    result, seen = run(monkeypatch, "--site", "lab", "--rack", "r1", "--at", at, "--nodes")
    assert result.exit_code == 0, result.output
    assert seen == {"site": "lab", "rack": "r1"}
    lines = result.output.splitlines()
    # 2 nodes x 10 h x 8 GPUs x 3 $ = 480 $ for the one accepted node; b served 6 h (48 GPU-h)
    [training] = [line for line in lines if line.startswith("│ training")]
    cells = [c.strip() for c in training.split("│")[1:-1]]
    assert cells == ["training", "2", "1", "32.0", "48.0", "32.0", "48.0", "16.0", "4.0", "480", "480"]
    assert "3 $/GPU-h" in result.output
    [node_a] = [line for line in lines if line.startswith("│ a ")]
    assert [c.strip() for c in node_a.split("│")[1:-1]] == [
        "a", "training", "8", "2.0", "6.0", "2.0", "0.0", "16.0", "-", "240"]


def test_bad_time_is_a_usage_error(monkeypatch):
    result, _ = run(monkeypatch, "--at", "yesterday-ish")
    assert result.exit_code == 2 and "ISO 8601" in result.output
