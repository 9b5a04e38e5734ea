"""bringup.insight.metrics and bringup.insight.metrics_server: the exposition text of a small fleet (built by
the real evidence store and judge, parsed back with prometheus_client's parser), the ledger's
GPU-hours, unreadable documents counted, the textfile written atomically, reloads that fail."""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from fleet_fixtures import T0, Journal, burn_in_and_judge, history
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from bringup.insight.fleetdata import JournalEntry, build
from bringup.insight.ledger import node_ledger
from bringup.insight.metrics import FleetCollector, families, registry_of, write_textfile
from bringup.insight.metrics_server import Reloader
from bringup.lifecycle.engine import State

AT = pd.Timestamp(T0 + timedelta(hours=10))


def fleet():
    """n1 failed (hot GPU 3) then passed and serves; n2 failed and sits in quarantine;
    n3 has no burn-in yet; n4's stage is the legacy name ``admitted``."""
    j1, j2 = Journal(), Journal()
    burn_in_and_judge(j1, "n1", T0 + timedelta(hours=1), hot_gpu=3)
    burn_in_and_judge(j1, "n1", T0 + timedelta(hours=3))
    burn_in_and_judge(j2, "n2", T0 + timedelta(hours=1), hot_gpu=5)
    return build([
        history("n1", j1, ((0, "planned"), (1, "provisioned"), (2, "quarantined"), (3, "provisioned"), (4, "active"))),
        history("n2", j2, ((0, "planned"), (1, "provisioned"), (2, "quarantined")), stage="quarantined"),
        history("n3", None, ((0, "planned"),), stage="planned", pool="inference", gpus=4),
        history("n4", None, ((0, "planned"), (1, "admitted")), stage="admitted")])


def scrape(fd) -> dict:
    """name -> [(labels, value)], from the text a scrape returns."""
    c = FleetCollector()
    c.update(families(fd, AT), AT.timestamp())
    text = generate_latest(registry_of(c)).decode()
    return {f.name: [(s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


def value(m: dict, name: str, **labels) -> float:
    [v] = [v for lab, v in m[name] if all(lab.get(k) == x for k, x in labels.items())]
    return v


def test_exposition_of_a_small_fleet():
    m = scrape(fleet())
    assert value(m, "bringup_node_busbw_gbps", node="n1") == 476.3
    # the last burn-in's figures: n1's second run (63 C), not its first (95 C)
    assert value(m, "bringup_node_max_temp_celsius", node="n1") == 63
    assert value(m, "bringup_node_max_temp_celsius", node="n2") == 95
    assert value(m, "bringup_gpu_max_temp_celsius", node="n2", gpu="5", serial="SN-n2-5") == 95
    assert value(m, "bringup_gpu_max_temp_celsius", node="n1", gpu="3") == 63
    assert value(m, "bringup_gpu_gflops", node="n1", gpu="7") == 51700.0
    assert value(m, "bringup_gpu_max_power_watts", node="n1", gpu="2") == 682.0
    assert value(m, "bringup_node_check_figure", node="n1", check="nccl", metric="busbw_largest_gbps") == 476.3
    assert value(m, "bringup_node_check_figure", node="n2", check="clocks", metric="max_temp_c") == 95
    assert value(m, "bringup_node_driver_info", node="n1", driver="570.86.15") == 1
    assert value(m, "bringup_node_burnin_runs", node="n1") == 2 and value(m, "bringup_node_burnin_runs", node="n3") == 0
    # the second burn-in's document was stored 3 h 31 min after T0
    assert value(m, "bringup_node_last_burnin_timestamp_seconds", node="n1") == \
        (T0 + timedelta(hours=3, minutes=31)).timestamp()
    assert not [lab for lab, _ in m["bringup_node_last_burnin_timestamp_seconds"] if lab["node"] == "n3"]
    assert not [lab for lab, _ in m["bringup_node_busbw_gbps"] if lab["node"] == "n3"]  # no figure: no sample
    labels = m["bringup_node_busbw_gbps"][0][0]
    assert {k: labels[k] for k in ("site", "rack", "pool", "sku")} == {
        "site": "lab", "rack": "r1", "pool": "training", "sku": "hgx-h100-80gb"}
    assert value(m, "bringup_metrics_snapshot_timestamp_seconds") == AT.timestamp()
    assert value(m, "bringup_metrics_last_reload_success") == 1


def test_stage_and_verdict_are_one_hot():
    m = scrape(fleet())
    want = {"n1": "active", "n2": "quarantined", "n3": "planned", "n4": "active"}  # admitted is today's active
    for node, stage in want.items():
        samples = {lab["stage"]: v for lab, v in m["bringup_node_stage"] if lab["node"] == node}
        assert set(samples) == {s.value for s in State}
        assert samples[stage] == 1 and sum(samples.values()) == 1
    verdicts = {node: {lab["verdict"]: v for lab, v in m["bringup_node_verdict"] if lab["node"] == node}
                for node in want}
    assert verdicts["n1"]["pass"] == 1 and sum(verdicts["n1"].values()) == 1  # the last run, not the first
    assert verdicts["n2"]["fail"] == 1 and sum(verdicts["n2"].values()) == 1
    assert sum(verdicts["n3"].values()) == 0 and len(verdicts["n3"]) == 5  # no burn-in yet: no verdict


def test_unknown_stage_is_shown_as_itself():
    m = scrape(build([history("n1", None, ((0, "planned"),), stage="on-fire")]))
    samples = {lab["stage"]: v for lab, v in m["bringup_node_stage"]}
    assert samples["on-fire"] == 1 and sum(samples.values()) == 1


def test_gpu_hours_match_the_ledger():
    fd = fleet()
    m = scrape(fd)
    led = node_ledger(fd.nodes, fd.stages, AT, 0.0)
    for node, r in led.iterrows():
        for account in ("burnin", "quarantine", "waiting", "serving"):
            assert value(m, "bringup_node_gpu_hours", node=node, account=account) == pytest.approx(r[f"{account}_gpu_h"])
        assert value(m, "bringup_node_failed_burnin_gpu_hours", node=node) == pytest.approx(r["failed_burnin_gpu_h"])
    # by hand: n1 burned in 1 h + 1 h, sat 1 h in quarantine, served 6 h, 8 GPUs; n3 waited 10 h with 4
    assert value(m, "bringup_node_gpu_hours", node="n1", account="serving") == 48.0
    assert value(m, "bringup_node_gpu_hours", node="n1", account="burnin") == 16.0
    assert value(m, "bringup_node_failed_burnin_gpu_hours", node="n1") == 8.0
    assert value(m, "bringup_node_gpu_hours", node="n3", account="waiting") == 40.0
    assert value(m, "bringup_node_planned_to_serving_hours", node="n1") == 4.0
    assert not [lab for lab, _ in m["bringup_node_planned_to_serving_hours"] if lab["node"] == "n2"]


def test_unreadable_documents_are_counted():
    bad = Journal()
    burn_in_and_judge(bad, "n1", T0)
    burn_in_and_judge(bad, "n1", T0 + timedelta(hours=2))
    for i in (1, 3):  # both verdicts altered after they were stored
        e = bad.entries[i]
        bad.entries[i] = JournalEntry(e.id, e.created, e.kind, e.comments.replace('"pass"', '"fail"'))
    fd = build([history("n1", bad), history("n2", None)])
    assert len(fd.findings) == 2
    m = scrape(fd)
    assert value(m, "bringup_unreadable_documents", node="n1") == 2
    assert value(m, "bringup_unreadable_documents", node="n2") == 0  # present, so sum() is never empty
    assert value(m, "bringup_node_verdict", node="n1", verdict="unreadable") == 1


def test_textfile_is_written_atomically(tmp_path, monkeypatch):
    out = tmp_path / "bringup.prom"
    out.write_text("old\n")
    c = FleetCollector()
    c.update(families(fleet(), AT), AT.timestamp())
    renames = []
    real_replace = os.replace

    def replace(src, dst):
        # at the moment of the rename: the whole text is in the temporary file beside OUT,
        # and OUT still holds the old snapshot
        renames.append((os.path.dirname(src), os.path.basename(src), Path(src).read_text(), Path(dst).read_text()))
        real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    write_textfile(out, registry_of(c))
    [(folder, name, new, old)] = renames
    assert folder == str(tmp_path) and name != out.name and old == "old\n"
    assert new == out.read_text()
    names = {f.name for f in text_string_to_metric_families(out.read_text())}
    assert {"bringup_node_stage", "bringup_node_gpu_hours", "bringup_unreadable_documents"} <= names
    assert out.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left


def test_textfile_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    out = tmp_path / "bringup.prom"
    out.write_text("old\n")

    def refuse(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_textfile(out, registry_of(FleetCollector(families(fleet(), AT))))
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == [out.name]


def test_failed_reload_keeps_the_last_snapshot_and_says_so(caplog):
    fd = fleet()
    loads = [lambda: fd, lambda: (_ for _ in ()).throw(ConnectionError("NetBox is down"))]
    c = FleetCollector()
    r = Reloader(c, lambda: loads.pop(0)(), refresh=60, clock=lambda: AT.timestamp())
    assert r.reload() is True and r.loaded.is_set()
    with caplog.at_level(logging.WARNING, logger="bringup.insight.metrics_server"):
        assert r.reload() is False
    assert "ConnectionError: NetBox is down" in caplog.text
    text = generate_latest(registry_of(c)).decode()
    m = {f.name: f.samples for f in text_string_to_metric_families(text)}
    assert m["bringup_metrics_last_reload_success"][0].value == 0
    assert m["bringup_metrics_last_reload_timestamp_seconds"][0].value == AT.timestamp()
    assert len([s for s in m["bringup_node_stage"] if s.value == 1]) == 4  # the last snapshot, whole


def test_before_the_first_load_only_the_status_is_served():
    text = generate_latest(registry_of(FleetCollector())).decode()
    m = {f.name: f.samples for f in text_string_to_metric_families(text)}
    assert list(m) == ["bringup_metrics_last_reload_success"]
    assert m["bringup_metrics_last_reload_success"][0].value == 0
