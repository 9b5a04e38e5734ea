"""burnin.yml over real SSH: the document comes back (even when the agent exits
non-zero); an SSH drop mid-run (the lab's ssh_drop fault, played by the real node
supervisor process) is a clear error, never a pass; an NCCL run that dies mid-sweep or is
cut before its summary (faults injected as ``bringup lab inject`` does) is judged a failure
naming the run, never an admission."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bringup.acceptance.judge import judge
from bringup.acceptance.plan import make_plan
from bringup.acceptance.result import parse_result
from bringup.acceptance.thresholds import SkuThresholds, thresholds_for
from bringup.errors import AnsibleError, SSHError
from bringup.provision.ansible_steps import AGENT_DIR, run_burnin
from bringup.sku import load_skus
from lab.fleet import Fault
from lab.inject import inject
from lab.nodes.sshd import sshd_pid

pytestmark = pytest.mark.integration

FAKE_AGENT = '''
import argparse, json, sys, time
ap = argparse.ArgumentParser()
sub = ap.add_subparsers(dest="cmd")
run = sub.add_parser("run")
run.add_argument("--plan")
run.add_argument("--out")
a = ap.parse_args()
plan = json.load(open(a.plan))
time.sleep(plan.get("sleep", 0))
if plan.get("write", True):
    open(a.out, "w").write(json.dumps({"schema_version": 1, "fake": True, "plan": plan}))
print("fake agent done", file=sys.stderr)
sys.exit(plan.get("rc", 0))
'''


@pytest.fixture
def fake_agent(tmp_path):
    d = tmp_path / "agent" / "burnin"
    d.mkdir(parents=True)
    (d / "__init__.py").write_text("")
    (d / "__main__.py").write_text(FAKE_AGENT)
    return d


@pytest.fixture
def served(lab_factory, tmp_path):
    """Nodes plus the real supervisor process (``python -m lab.nodes serve``)."""
    lab = lab_factory(85, [("good", "[]"), ("flaky", "[{kind: ssh_drop, value: 1.0}]")])
    with open(tmp_path / "serve.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "lab.nodes", "serve", "--fleet", str(lab.fleet_file),
                                 "--home", str(lab.home)], stdout=log, stderr=subprocess.STDOUT,
                                cwd=Path(__file__).resolve().parents[3], start_new_session=True)
        yield lab
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    # the supervisor stops the nodes' sshd on its way out
    assert not any(sshd_pid(lab.home, n.name) for n in lab.fleet.nodes)


def test_real_agent_result_comes_back(node_lab):
    plan = {"schema_version": 1, "checks": ["versions", "inventory"]}
    run = run_burnin("ok", node_lab.host("ok"), plan, node_lab.access, timeout_s=120, agent_dir=AGENT_DIR)
    assert run.document["schema_version"] == 1
    assert run.rc is not None
    assert json.loads(run.text) == run.document


def test_document_fetched_even_when_the_agent_exits_non_zero(node_lab, fake_agent):
    run = run_burnin("ok", node_lab.host("ok"), {"rc": 1}, node_lab.access, timeout_s=60, agent_dir=fake_agent)
    assert run.rc == 1 and run.document["fake"] is True and run.document["plan"] == {"rc": 1}


def test_agent_without_a_document_is_an_error_never_a_pass(node_lab, fake_agent):
    with pytest.raises(AnsibleError) as exc:
        run_burnin("ok", node_lab.host("ok"), {"rc": 3, "write": False}, node_lab.access, timeout_s=60,
                   agent_dir=fake_agent)
    assert "node ok: burn-in produced no result document" in str(exc.value)
    assert "exit 3" in str(exc.value) and exc.value.transient is False


def test_agent_timeout_is_reported(node_lab, fake_agent):
    with pytest.raises(AnsibleError, match=r"exit 124, timed out"):
        run_burnin("ok", node_lab.host("ok"), {"sleep": 30, "write": False}, node_lab.access, timeout_s=2,
                   agent_dir=fake_agent)


def test_ssh_drop_mid_burnin_is_a_clear_failure(served, fake_agent):
    lab = served
    # the healthy node of the same supervisor still passes
    good = run_burnin("good", lab.host("good"), {"sleep": 0}, lab.access, timeout_s=60, agent_dir=fake_agent)
    assert good.rc == 0 and good.document["fake"]
    t0 = time.monotonic()
    with pytest.raises(SSHError) as exc:
        run_burnin("flaky", lab.host("flaky"), {"sleep": 150}, lab.access, timeout_s=240, agent_dir=fake_agent)
    # dropped, not run to completion (a wide margin: a loaded 2-core machine took 37 s)
    assert time.monotonic() - t0 < 120
    msg = str(exc.value)
    assert "node flaky: the SSH connection dropped during burn-in" in msg
    assert "not passed" in msg
    # the class says what it means: about the node, not retried (errors carry no node field)
    assert exc.value.transient is False and not exc.value.controller_fault and "node flaky" in msg
    # the supervisor brings the node back afterwards
    deadline = time.monotonic() + 20
    while sshd_pid(lab.home, "flaky") is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sshd_pid(lab.home, "flaky")


@pytest.mark.parametrize("fault, status, code, says", [
    # all_reduce_perf prints two rows, then the failing rank's "Test NCCL failure" lines
    # (laid out as nccl-tests #322 records them) and exits 3: the run failed
    ({"kind": "nccl_dies", "value": 2}, "fail", "nccl_failed",
     "failed after the 2147483648-byte row: nccl1: Test NCCL failure common.cu:1204"),
    # three rows, then nothing, exit 0 (a log cut before its summary): the agent cannot
    # say how the run ended, an error of the check, never a pass
    ({"kind": "nccl_cut", "value": 3}, "error", "nccl_incomplete",
     "cut before its summary, after the 4294967296-byte row"),
], ids=["dies_mid_sweep", "cut_before_summary"])
def test_an_nccl_run_that_did_not_finish_is_never_admitted(lab_factory, fault, status, code, says):
    lab = lab_factory(91, [("nccl1", "[]")])
    spec = lab.fleet.node("nccl1")
    inject(lab.home, spec, Fault.model_validate(fault))  # what `bringup lab inject nccl1 <kind>` does
    sku = load_skus()[spec.sku]
    th = thresholds_for(sku)
    th = SkuThresholds(sku=th.sku, values=th.values, rules=th.rules, required_checks=["nccl"])
    m = lab.manifest
    versions = {"driver": m.packages.driver, "cuda": m.packages.cuda, "nccl": m.packages.nccl, "kernel": m.os.kernel}
    plan = make_plan(sku, th, versions, "quick", node="nccl1", checks=["nccl"])
    run = run_burnin("nccl1", lab.host("nccl1"), plan, lab.access, timeout_s=120, agent_dir=AGENT_DIR)
    result = parse_result(run.document)
    nccl = result.check("nccl")
    assert nccl.status == status and not nccl.data["complete"], nccl
    verdict = judge(result, th)
    # the judge step records anything but a pass as not ok: the lifecycle quarantines the node
    assert verdict.status == "fail", verdict.text()
    hits = [r for r in verdict.reasons if r.check == "nccl" and r.code == code]
    assert hits and any(says in r.message for r in hits), verdict.text()
    assert "all_reduce_perf" in hits[0].remediation
