"""A real Prometheus (Debian's ``prometheus``) scrapes ``bringup metrics serve``'s server and
answers PromQL with the fleet's figures. No lab: the fleet is built here by the real evidence
store and judge (tests/unit/fleet_fixtures.py), served by :func:`bringup.insight.metrics_server.serve`
(the code the CLI runs) on a free loopback port; Prometheus gets its own config, data folder
and free port, and is stopped whatever happens."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from bringup.insight.fleetdata import JournalEntry, NodeHistory, StageChange, build
from bringup.insight.ledger import node_ledger
from bringup.insight.metrics_server import serve

# the fixture data the unit tests use (documents written the way the real code writes them)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from fleet_fixtures import H100, Journal, agent_document, burn_in_and_judge

pytestmark = pytest.mark.integration

PROMETHEUS = "/usr/bin/prometheus"


def free_port() -> int:
    """A port the OS has free now on loopback (for Prometheus, which takes a fixed one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fleet():
    """n1 passed and serves, n2 failed on a hot GPU and is quarantined, n3 serves with a
    busbw of its own, n4 waits; n2 also has a broken (altered) document."""
    now = datetime.now(UTC)
    at = now - timedelta(hours=6)

    def node(name, steps, stage, journal=None, gpus=8):
        return NodeHistory(node=name, site="lab", rack="r1", pool="training", sku=H100, gpus=gpus, stage=stage,
                           journal=list(journal.entries) if journal else [],
                           changes=[StageChange((now - timedelta(hours=h)).isoformat(), s) for h, s in steps])
    j1, j2, j3 = Journal(), Journal(), Journal()
    burn_in_and_judge(j1, "n1", at)
    burn_in_and_judge(j2, "n2", at, hot_gpu=2)
    burn_in_and_judge(j2, "n2", at + timedelta(hours=1), hot_gpu=2)
    e = j2.entries[3]  # n2's second verdict, altered after it was stored: unreadable
    j2.entries[3] = JournalEntry(e.id, e.created, e.kind, e.comments.replace('"fail"', '"pass"'))
    j3.now = at
    doc = agent_document("n3", started=at)
    nccl = next(c for c in doc["checks"] if c["name"] == "nccl")
    nccl["metrics"]["busbw_largest_gbps"] = 468.5
    burn_in_and_judge(j3, "n3", at, raw=doc)
    return build([
        node("n1", ((8, "planned"), (6, "provisioned"), (5, "active")), "active", j1),
        node("n2", ((8, "planned"), (6, "provisioned"), (4, "quarantined")), "quarantined", j2),
        node("n3", ((8, "planned"), (6, "provisioned"), (5, "active")), "active", j3, gpus=4),
        node("n4", ((3, "planned"),), "planned")])


def query(prom: str, promql: str, at: float | None = None) -> list:
    params = {"query": promql} | ({"time": repr(at)} if at is not None else {})
    with urllib.request.urlopen(f"{prom}/api/v1/query?{urllib.parse.urlencode(params)}", timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def scalar(prom: str, promql: str, at: float | None = None) -> float | None:
    result = query(prom, promql, at)
    return float(result[0]["value"][1]) if len(result) == 1 else None


def test_prometheus_scrapes_the_fleet(tmp_path):
    if not Path(PROMETHEUS).exists() and not shutil.which("prometheus"):
        pytest.fail("Prometheus is not installed: run scripts/bootstrap (it installs Debian's prometheus package)")
    fd = fleet()
    assert len(fd.findings) == 1
    # one snapshot for the whole test (refresh far away): every query sees the same figures
    server = serve(lambda: fd, port=0, address="127.0.0.1", refresh=3600)
    proc = None
    log = tmp_path / "prometheus.log"
    try:
        assert server.reloader.loaded.wait(30), "the first reload did not finish"
        port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(json.dumps({  # JSON is YAML
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": "bringup", "static_configs": [
                {"targets": [f"127.0.0.1:{server.port}"]}]}]}))
        with log.open("wb") as out:
            proc = subprocess.Popen([shutil.which("prometheus") or PROMETHEUS, f"--config.file={config}",
                                     f"--storage.tsdb.path={tmp_path / 'data'}",
                                     f"--web.listen-address=127.0.0.1:{port}"],
                                    stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
        prom = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        up = None
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"prometheus exited {proc.returncode}:\n{log.read_text()[-3000:]}"
            try:
                up = scalar(prom, 'up{job="bringup"}')
                if up == 1 and scalar(prom, "count(bringup_node_stage)") is not None:
                    break
            except OSError:
                pass  # not listening yet
            time.sleep(0.5)
        assert up == 1, f"Prometheus never scraped the exporter:\n{log.read_text()[-3000:]}"

        assert scalar(prom, 'sum(bringup_node_stage{stage="active"})') == 2
        assert scalar(prom, 'sum(bringup_node_stage{stage="quarantined"})') == 1
        assert scalar(prom, "sum(bringup_node_stage)") == 4  # one-hot: one stage per node
        assert scalar(prom, 'bringup_node_busbw_gbps{node="n1"}') == 476.3
        assert scalar(prom, 'bringup_node_busbw_gbps{node="n3"}') == 468.5
        assert scalar(prom, 'bringup_node_check_figure{node="n3",check="nccl",metric="busbw_largest_gbps"}') == 468.5
        assert scalar(prom, 'bringup_gpu_max_temp_celsius{node="n2",gpu="2"}') == 95
        assert scalar(prom, 'sum(bringup_node_verdict{verdict="pass"})') == 2
        assert scalar(prom, 'bringup_node_verdict{node="n2",verdict="unreadable"}') == 1
        assert scalar(prom, "sum(bringup_unreadable_documents)") == 1
        assert scalar(prom, "bringup_metrics_last_reload_success") == 1
        # GPU-hours as the ledger counts them at the snapshot's time
        taken = scalar(prom, "bringup_metrics_snapshot_timestamp_seconds")
        led = node_ledger(fd.nodes, fd.stages, pd.Timestamp(taken, unit="s", tz="UTC"), 0.0)
        for account in ("burnin", "quarantine", "waiting", "serving"):
            got = scalar(prom, f'sum(bringup_node_gpu_hours{{account="{account}"}})')
            assert got == pytest.approx(led[f"{account}_gpu_h"].sum(), rel=1e-9), account
        # n1: 1 h burn-in, 2 h waiting, 5 h serving (to the second), 8 GPUs
        assert scalar(prom, 'bringup_node_gpu_hours{node="n1",account="serving"}') == pytest.approx(40, abs=0.01)
        assert scalar(prom, 'sum by (pool) (bringup_node_gpu_hours{account="serving"})') == \
            pytest.approx(40 + 20, abs=0.01)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        server.stop()
