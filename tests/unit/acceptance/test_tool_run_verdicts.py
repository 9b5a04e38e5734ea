"""What the controller concludes from the tool outputs of issue #26 (recorded public samples,
tests/fixtures/*/README.md): ``bringup parse`` understands a failed or cut run (ok False with
the reason, never a parse error), and the judge never admits a node on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bringup.acceptance.judge import REMEDIATION, judge
from bringup.acceptance.plan import make_plan, manifest_versions
from bringup.acceptance.replay import replay
from bringup.acceptance.result import parse_result
from bringup.acceptance.thresholds import SkuThresholds, thresholds_for
from bringup.sku import load_skus
from bringup.yamlio import load_file
from burnin.checks.base import CheckResult, Context
from burnin.checks.tools import DcgmCheck, NcclCheck
from burnin.proc import ToolRun

FIX = Path(__file__).resolve().parents[2] / "fixtures"
REPO = Path(__file__).resolve().parents[3]
H100 = "hgx-h100-80gb"


def read(*parts: str) -> str:
    return FIX.joinpath(*parts).read_text()


# --- bringup parse (replay) ---------------------------------------------------------------------------
@pytest.mark.parametrize("name,check,needle", [
    ("nccl1039-aborted-rows-no-summary.txt", "nccl_incomplete", "cut before its summary"),
    ("issue322-rows-then-nccl-failure-multihost.txt", "nccl_failed", "Test NCCL failure"),
    ("issue219-failure-before-rows-mpirun.txt", "nccl_failed", "before any table row"),
    ("issue218-mpirun-exited-on-signal.txt", "nccl_launcher_failed", "exited on signal"),
])
def test_replay_understands_failed_and_cut_runs(name, check, needle):
    r = replay("nccl", read("nccl-tests", name), load_skus()[H100])
    assert r.ok is False
    hit = [f for f in r.findings if f.check == check]
    assert hit and needle in hit[0].message and hit[0].severity in ("fail", "error")
    assert r.figures["complete"] is False


def test_replay_failed_run_before_rows_has_no_bandwidth_figure():
    r = replay("nccl", read("nccl-tests", "issue219-failure-before-rows-mpirun.txt"))
    assert r.figures["busbw_gbps"] is None and r.figures["rows"] == 0 and r.figures["failures"]


@pytest.mark.parametrize("name", ["issue322-rows-then-nccl-failure-multihost.txt",
                                  "nccl1184-tree-failure-after-512k-row.txt", "nccl1039-aborted-rows-no-summary.txt"])
def test_replay_of_a_run_that_did_not_finish_judges_no_bandwidth(name):
    # issue322's rows reach 16 GiB at ~366 GB/s, below the H100 gate: the run died, that is all
    for sku in (load_skus()[H100], None):
        r = replay("nccl", read("nccl-tests", name), sku)
        assert not {f.check for f in r.findings} & {"busbw_low", "busbw_unjudged"}, r.findings
        assert r.figures["busbw_gbps"] is None and r.figures["busbw_sizes"] == [] and r.figures["rows"] > 0


def test_replay_dcgm_skip_is_reported_and_ibstat_without_device_is_not_ok():
    r = replay("dcgm", read("dcgm", "dcgm1.7-per-gpu-skips-saved.json"))
    assert {f.check for f in r.findings if f.severity != "info"} == {"dcgm_failed"}
    assert "diagnostic" in r.figures["skipped"]
    ib = replay("ibstat", read("ibstat", "azhpc-images213-ibpanic-only.txt"), load_skus()[H100])
    assert ib.ok is False and ib.figures["ports"] == []
    assert {f.check for f in ib.findings} == {"ib_no_device", "ib_port_missing"}


# --- the plan carries the SKU's required DCGM tests for its profile -----------------------------------
def test_plan_carries_the_required_dcgm_tests_of_its_profile():
    sku = load_skus()[H100]
    versions = manifest_versions(load_file(REPO / "images" / "ubuntu-2404-cuda128.yaml").data)
    th = thresholds_for(sku)
    assert make_plan(sku, th, versions, "quick")["limits"]["dcgm_required_tests"] == ["software"]
    full = make_plan(sku, th, versions, "full")["limits"]["dcgm_required_tests"]
    assert {"memory", "diagnostic", "targeted_stress"} <= set(full)


# --- the judge on what the agent makes of those outputs ------------------------------------------------
def agent(check, stdout: str, rc: int = 0, limits: dict | None = None) -> dict:
    ctx = Context({"limits": limits or {}}, nvml=None)  # type: ignore[arg-type]
    ctx.run = lambda *a, **k: ToolRun([check.name], rc=rc, stdout=stdout)  # type: ignore[method-assign]
    r = CheckResult(name=check.name)
    check.run(ctx, r)
    return r.to_dict()


def verdict(*checks: dict):
    th = thresholds_for(load_skus()[H100])
    names = [c["name"] for c in checks]
    th = SkuThresholds(sku=th.sku, values=th.values, rules=th.rules, required_checks=names)
    doc = {"schema_version": 1, "agent_version": "0.1.0", "node": {"name": "n1", "hostname": "n1"},
           "started": "2026-12-01T00:00:00Z", "finished": "2026-12-01T00:01:00Z", "plan": {"checks": names},
           "checks": list(checks)}
    return judge(parse_result(json.dumps(doc)), th)


@pytest.mark.parametrize("name,rc,code", [
    ("nccl1039-aborted-rows-no-summary.txt", 0, "nccl_incomplete"),
    ("issue322-rows-then-nccl-failure-multihost.txt", 1, "nccl_failed"),
    ("issue219-failure-before-rows-mpirun.txt", 1, "nccl_failed"),
    ("issue294-mpirun-nonzero-status.txt", 1, "nccl_launcher_failed"),
])
def test_judge_never_admits_a_failed_or_cut_nccl_run(name, rc, code):
    v = verdict(agent(NcclCheck(), read("nccl-tests", name), rc, {"min_busbw_gbps": 1}))
    assert v.status == "fail", v.text()
    (reason,) = [r for r in v.reasons if r.code == code]
    assert reason.check == "nccl" and reason.remediation == REMEDIATION[code].format_map({})


@pytest.mark.parametrize("name,rc,code", [
    ("issue322-rows-then-nccl-failure-multihost.txt", 1, "nccl_failed"),  # rows at ~366 GB/s, then died
    ("nccl1039-aborted-rows-no-summary.txt", 0, "nccl_incomplete"),  # cut after the 64-byte row
])
def test_a_run_that_did_not_finish_is_no_bandwidth_figure_for_gate_peers_or_baseline(name, rc, code):
    # the H100 gate (460 GB/s), five peers and a baseline from the recorded p5 run (~480 GB/s)
    healthy = agent(NcclCheck(), read("nccl-tests", "awsome-batch-p5-tag-output.txt"), 0, {"min_busbw_gbps": 460})
    assert healthy["status"] == "pass" and verdict(healthy).status == "pass"
    mine = agent(NcclCheck(), read("nccl-tests", name), rc, {"min_busbw_gbps": 460})
    th = thresholds_for(load_skus()[H100])
    th = SkuThresholds(sku=th.sku, values=th.values, rules=th.rules, required_checks=["nccl"], peers=th.peers)

    def doc(check: dict) -> dict:
        return {"schema_version": 1, "agent_version": "0.1.0", "node": {"name": "n", "hostname": "n"},
                "started": "2026-12-01T00:00:00Z", "finished": "2026-12-01T00:01:00Z",
                "plan": {"checks": ["nccl"]}, "checks": [check]}
    peers = [(f"p{i}", doc(healthy)) for i in range(5)]
    v = judge(parse_result(json.dumps(doc(mine))), th, peers, baseline={"busbw": 480.43})
    assert v.status == "fail" and [r.code for r in v.reasons] == [code], v.text()
    assert not [w for w in v.warnings if "busbw" in w.code], v.warnings
    assert {c.outcome for c in v.peer_checks if c.figure == "busbw"} == {"skipped"}


def test_judge_passes_a_tolerated_dcgm_skip_and_fails_a_required_one():
    # constructed: the saved DCGM run with its sm_stress failures turned into passes
    doc = read("dcgm", "dcgm1.7-per-gpu-skips-saved.json").replace('"status": "FAIL"', '"status": "PASS"')
    ok = verdict(agent(DcgmCheck(), doc, 0, {"dcgm_required_tests": ["pcie"]}))
    assert ok.status == "pass", ok.text()
    bad = verdict(agent(DcgmCheck(), doc, 0, {"dcgm_required_tests": ["pcie", "diagnostic", "eud"]}))
    assert bad.status == "fail"
    assert {(r.code, "diagnostic" in r.message or "eud" in r.message) for r in bad.reasons} == {
        ("dcgm_not_run", True), ("dcgm_required_missing", True)}
