"""``bringup metrics``: the textfile written from fleet data, and ``serve`` wiring its options
into the exporter (NetBox and the HTTP server replaced: no socket in a unit test)."""

from __future__ import annotations

from fleet_fixtures import history
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from bringup.insight import metrics_server
from bringup.insight.fleetdata import build
from bringup_cli import app, metrics_cmd

FLEET = [history("a", steps=((0, "planned"), (2, "active"))),
         history("b", steps=((0, "planned"), (2, "quarantined")), stage="quarantined")]


def fake_loader(monkeypatch):
    seen = {}

    def loader(config, site, rack):
        seen.update(site=site, rack=rack)
        return lambda: build(FLEET)
    monkeypatch.setattr(metrics_cmd, "_loader", loader)
    return seen


def test_textfile(monkeypatch, tmp_path):
    seen = fake_loader(monkeypatch)
    out = tmp_path / "bringup.prom"
    result = CliRunner().invoke(app, ["metrics", "textfile", "--out", str(out), "--site", "lab"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert seen == {"site": "lab", "rack": None}
    assert f"wrote {out}: 2 node(s)" in result.output
    fams = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    active = {s.labels["node"] for s in fams["bringup_node_stage"].samples if s.value == 1 and s.labels["stage"] == "active"}
    assert active == {"a"}
    assert fams["bringup_metrics_last_reload_success"].samples[0].value == 1


def test_serve_passes_its_options_and_stops(monkeypatch):
    fake_loader(monkeypatch)
    calls = []

    class Server:
        port = 43210

        def stop(self):
            calls.append("stop")

    def start(load, *, port, address, refresh):
        calls.append((len(load().nodes), port, address, refresh))
        return Server()

    def interrupted():
        raise KeyboardInterrupt
    monkeypatch.setattr(metrics_server, "serve", start)
    monkeypatch.setattr(metrics_cmd, "_wait_forever", interrupted)
    result = CliRunner().invoke(app, ["metrics", "serve", "--port", "0", "--address", "0.0.0.0", "--refresh", "5"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert calls == [(2, 0, "0.0.0.0", 5.0), "stop"]
    assert "serving http://0.0.0.0:43210/metrics (reload every 5s" in result.output


def test_refresh_below_a_second_is_refused(monkeypatch):
    fake_loader(monkeypatch)
    result = CliRunner().invoke(app, ["metrics", "serve", "--refresh", "0.1"])
    assert result.exit_code == 2
