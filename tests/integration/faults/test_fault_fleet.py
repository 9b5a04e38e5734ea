"""The fault suite, part one: every node-side fault the lab injects, side by side in one
commission run over tests/fixtures/fleets/faults.yaml.

For each scenario the run must end (bounded), admit no node on bad evidence, lose no
result it produced, and leave a reason in NetBox that says what failed. Healthy nodes
(one behind a slow BMC) are admitted in the same run: a fault on one node never stops
the others.
"""

from __future__ import annotations

import time

import pytest
import yaml

# the module's run (its fixture) counts against its first test: give it the bound that
# test_the_run_ends_bounded asserts, plus slack, instead of the suite's 600 s per test
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1200),
              pytest.mark.xdist_group("faults")]

ADMITTED = {"fs-r1-ok", "fs-r1-slowbmc"}
#: node -> (states it may end in, words one of which its NetBox reason must contain)
NOT_ADMITTED = {
    "fs-r2-bmc401": ({"planned", "quarantined"}, ["401", "credential", "refused"]),
    "fs-r2-bmc500": ({"planned"}, ["500"]),
    "fs-r3-bmctimeout": ({"planned"}, ["no answer", "timed out", "timeout"]),
    "fs-r3-neverback": ({"quarantined"}, ["SSH", "ssh"]),
    "fs-r4-sshdrop": ({"quarantined", "provisioned"}, ["SSH", "ssh", "connection"]),
    "fs-r4-toolhang": ({"quarantined"}, ["gpu_burn"]),
    "fs-r5-garbage": ({"quarantined"}, ["gpu_burn"]),
    "fs-r5-truncated": ({"quarantined"}, ["all_reduce_perf", "nccl"]),
    # the reason is the failure, never a bandwidth judged on the rows before it
    "fs-r6-nccldies": ({"quarantined"}, ["Test NCCL failure", "nccl_failed"]),
}
#: nodes whose burn-in ran to the end (or was cut): its document must be in NetBox
BURNED_IN = {"fs-r1-ok", "fs-r1-slowbmc", "fs-r4-toolhang", "fs-r5-garbage", "fs-r5-truncated", "fs-r6-nccldies"}


@pytest.fixture(scope="module")
def fault_run(fault_lab, fault_seeded):
    from flows import runtime
    from flows.commission import commission
    from flows.walk import RunFailed

    runtime.forget()
    t = time.monotonic()
    error = None
    try:
        rows = commission(site="fault-test", config=str(fault_lab), batches=0)
    except RunFailed as exc:  # an error on the controller's side is reported loudly
        rows, error = None, exc
    took = time.monotonic() - t
    nodes = {n.name: n for n in fault_seeded.nodes(site="fault-test")}
    return {"rows": rows, "error": error, "took": took, "nodes": nodes}


def test_the_run_ends_bounded(fault_run):
    # bounded by the slowest scenarios: a node that never returns (the lab's 60 s install
    # wait), a BMC that never answers (timeouts and retries), a hung tool (its budget)
    assert fault_run["took"] < 900, fault_run["took"]


def test_only_healthy_nodes_are_admitted(fault_run):
    nodes = fault_run["nodes"]
    admitted = {n for n, r in nodes.items() if r.stage == "active"}
    assert admitted == ADMITTED, {n: (r.stage, r.custom_fields.get("bringup_reason")) for n, r in nodes.items()}


def test_an_nccl_run_that_died_is_judged_by_its_failure_not_its_rows(fault_run):
    """Issue #26: rows before a "Test NCCL failure" measure nothing: the quarantine names
    the failure, and no bandwidth finding was made from the rows."""
    reason = str(fault_run["nodes"]["fs-r6-nccldies"].custom_fields.get("bringup_reason") or "")
    assert "Test NCCL failure" in reason and "busbw" not in reason, reason


@pytest.mark.parametrize("node", sorted(NOT_ADMITTED))
def test_each_fault_leaves_a_reason_that_says_what_failed(fault_run, node):
    rec = fault_run["nodes"][node]
    states, words = NOT_ADMITTED[node]
    reason = str(rec.custom_fields.get("bringup_reason") or "")
    assert rec.stage in states, (node, rec.stage, reason)
    assert any(w in reason for w in words), (node, reason)
    if rec.stage == "quarantined":
        assert rec.status == "failed"


def test_no_result_produced_is_lost(fault_run):
    for node in BURNED_IN:
        rec = fault_run["nodes"][node]
        docs = (rec.custom_fields.get("bringup_evidence") or {}).get("docs") or {}
        assert "burnin" in docs, (node, sorted(docs))
        # the verdict that admitted or quarantined it is there too, with its reasons
        assert "verdict" in docs, (node, sorted(docs))


def test_only_admitted_nodes_are_schedulable(fault_run, fault_lab):
    from bringup.kube import KubeAdapter
    settings = yaml.safe_load(fault_lab.read_text())
    kube = KubeAdapter.from_kubeconfig(settings["kubeconfig"])
    for node in fault_run["nodes"]:
        st = kube.node_state(node)
        if node in ADMITTED:
            assert st.exists and st.ready and not st.unschedulable, node
        else:
            assert not st.exists or st.unschedulable, (node, st)
