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


def run(monkeypatch, *args: str, accepted=None):
    seen = {}

    def fleet(config, site, rack):
        seen.update(site=site, rack=rack)
        return Settings(netbox_url="http://nb", netbox_token_file="/dev/null", gpu_hour_usd=3.0), build(FLEET)
    monkeypatch.setattr(cost_cmd, "_fleet", fleet)
    monkeypatch.setattr(cost_cmd, "_acceptances",
                        lambda s, pools: {p: (accepted or {}).get(p, (None, "")) for p in pools})
    result = CliRunner().invoke(app, ["cost", *args], env={"COLUMNS": "250"})
    return result, seen


def test_cost_table(monkeypatch):
    at = (T0 + timedelta(hours=10)).isoformat()
    result, seen = run(monkeypatch, "--site", "lab", "--rack", "r1", "--at", at, "--nodes")
    assert result.exit_code == 0, result.output
    assert seen == {"site": "lab", "rack": "r1"}
    lines = result.output.splitlines()
    # 2 nodes x 10 h x 8 GPUs x 3 $ = 480 $ for the one accepted node; b served 6 h (48 GPU-h)
    training = next(line for line in lines if line.startswith("│ training"))  # the ledger table's row
    cells = [c.strip() for c in training.split("│")[1:-1]]
    assert cells == ["training", "2", "1", "32.0", "48.0", "32.0", "48.0", "16.0", "4.0", "480", "480"]
    assert "3 $/GPU-h" in result.output
    [node_a] = [line for line in lines if line.startswith("│ a ")]
    assert [c.strip() for c in node_a.split("│")[1:-1]] == [
        "a", "training", "8", "2.0", "6.0", "2.0", "0.0", "16.0", "-", "240"]


def test_bad_time_is_a_usage_error(monkeypatch):
    result, _ = run(monkeypatch, "--at", "yesterday-ish")
    assert result.exit_code == 2 and "ISO 8601" in result.output


def test_normalised_cost_per_accepted_units_with_each_terms_source(monkeypatch):
    at = (T0 + timedelta(hours=10)).isoformat()
    result, _ = run(monkeypatch, "--at", at, accepted={"training": (1000.0, "accept-training-r1 (pass)")})
    assert result.exit_code == 0, result.output
    rows = {tuple(c.strip() for c in line.split("│")[1:3]): [c.strip() for c in line.split("│")[3:-1]]
            for line in result.output.splitlines() if line.startswith("│ training")}
    # b served 6 h: 1000 samples/s x 6 node-h x 3600 = 21.6 M samples; 160 GPU-h x 3 $ = 480 $
    assert rows[("training", "compute")][0] == "144" and "serving 48.0 GPU-h" in rows[("training", "compute")][1]
    assert rows[("training", "failed runs")][0] == "192"           # a's quarantine (48) + failed burn-in (16) GPU-h
    assert rows[("training", "idle")][0] == "96" and rows[("training", "operations")][0] == "48"
    assert "rates.network" in rows[("training", "network")][1]
    assert rows[("training", "total")][0] == "480"
    assert rows[("training", "accepted units (M samples)")][0] == "21.60"
    assert "accept-training-r1" in rows[("training", "accepted units (M samples)")][1]
    assert rows[("training", "$ per M accepted samples")][0] == "22.22"


def test_without_a_passed_acceptance_the_normalised_cost_is_unknown(monkeypatch):
    result, _ = run(monkeypatch, "--at", (T0 + timedelta(hours=10)).isoformat())
    assert result.exit_code == 0, result.output
    line = next(li for li in result.output.splitlines() if "$ per M accepted samples" in li)
    assert "unknown: no accepted units" in line and "│ -" in line
