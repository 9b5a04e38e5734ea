"""The full burn-in profile end to end in the lab, scaled down: the real agent copied over
real SSH by burnin.yml (Ansible) to installed simulated nodes, run under the time budget
its plan derives, fetched and judged.

A healthy node passes; a node whose nccl check hangs past the run's budget is killed by
the playbook's ``timeout``, and the partial document it leaves is judged ``incomplete``
naming nccl, with the finished checks kept as evidence.
"""

from __future__ import annotations

import time

import pytest

from bringup.acceptance.judge import judge
from bringup.acceptance.plan import make_plan
from bringup.acceptance.result import parse_result
from bringup.acceptance.thresholds import thresholds_for
from bringup.provision.ansible_steps import AGENT_DIR, run_burnin
from bringup.sku import load_skus
from lab.bmcsim.hardware import gpu_serial, present_gpus

pytestmark = pytest.mark.integration

# the full profile in seconds instead of hours: durations and timeouts x 0.01
SCALE = 0.01


@pytest.fixture
def full_lab(lab_factory):
    return lab_factory(89, [("healthy", "[]"), ("hangs", "[{kind: tool_hangs, value: all_reduce_perf}]")])


def plan_for(lab, name: str) -> tuple[dict, object]:
    node = lab.fleet.node(name)
    sku = load_skus()[node.sku]
    th = thresholds_for(sku)
    m = lab.manifest
    versions = {"driver": m.packages.driver, "cuda": m.packages.cuda, "nccl": m.packages.nccl, "kernel": m.os.kernel}
    plan = make_plan(sku, th, versions, "full", node=name, scale=SCALE)
    # sizes are not durations: keep the shared test host's disk and memory out of it
    plan["tools"]["fio"]["size"] = "64M"
    plan["tools"]["stress_ng"]["vm_bytes"] = "256M"
    return plan, th


def serials(lab, name: str) -> list[str]:
    node = lab.fleet.node(name)
    return [gpu_serial(node, i) for i in present_gpus(node, load_skus()[node.sku])]


def test_full_profile_passes_on_a_healthy_node_within_its_budget(full_lab):
    plan, th = plan_for(full_lab, "healthy")
    assert plan["profile"] == "full" and plan["tools"]["dcgmi"]["args"][:3] == ["diag", "-r", "3"]
    t0 = time.monotonic()
    run = run_burnin("healthy", full_lab.host("healthy"), plan, full_lab.access, agent_dir=AGENT_DIR)
    assert run.timeout_s == plan["budget_s"]  # the kill is the plan's budget, not a fixed 1800 s
    assert time.monotonic() - t0 < plan["budget_s"]
    assert run.rc == 0 and not run.partial
    result = parse_result(run.document)
    assert [c.name for c in result.checks if c.status != "pass"] == []
    assert {c.name for c in result.checks} == set(plan["checks"])
    dcgm = result.check("dcgm")
    assert dcgm.metrics["tests_passed"] == 7  # level 3: software .. memory_bandwidth
    verdict = judge(result, th, bmc_serials=serials(full_lab, "healthy"))
    assert verdict.status == "pass", verdict.text()


def test_run_killed_at_its_budget_leaves_a_partial_document_judged_incomplete(full_lab):
    plan, th = plan_for(full_lab, "hangs")
    plan["tools"]["all_reduce_perf"]["timeout_s"] = 600  # the hung tool outlives the run
    plan["check_timeouts_s"]["nccl"] = 630
    # a budget that covers the checks before nccl but not the hang (the pre-stress checks
    # take some 10-15 s here: stress-ng 6 s, fio 1 s, NVML queries; x4 for a loaded host)
    run = run_burnin("hangs", full_lab.host("hangs"), plan, full_lab.access, agent_dir=AGENT_DIR, timeout_s=60)
    assert run.rc == 124 and run.partial
    result = parse_result(run.document)
    assert result.running == "nccl" and "SIGTERM" in (result.stopped or "")
    finished = {c.name for c in result.checks}
    assert {"versions", "inventory", "dcgm", "gpu_burn", "cpu_mem", "disk"} <= finished
    assert all(c.status == "pass" for c in result.checks)
    verdict = judge(result, th, bmc_serials=serials(full_lab, "hangs"))
    assert verdict.status == "incomplete", verdict.text()
    assert verdict.reasons[0].code == "unfinished" and verdict.reasons[0].check == "nccl"
    assert "stopped during nccl" in verdict.reasons[0].message
