"""``Lifecycle.inspect`` (issue #27, item 2): a serving node a health system hands over for a
part to replace goes ``active -> inspection`` with no re-test: NetBox failed and tagged,
cordoned, tainted and drained, journaled with who sent it; an operator's repair is the way
out, and the re-burn-in and gate after it admit the node again."""

from __future__ import annotations

from lifecycle_fakes import MemoryRecords

from bringup.lifecycle.engine import ALLOWED, STEP_NAMES, Lifecycle, State, path
from bringup.lifecycle.results import StepResult

WHY = ["NVSentinel handed the node over (err-1: bmc_psu_lost): BMC: power supply 2 lost"]


def site(stage: str = "active") -> tuple[MemoryRecords, Lifecycle, list]:
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = stage
    calls: list = []
    steps = {s: (lambda node, p, s=s: StepResult(node=node.name, step=s, ok=True)) for s in STEP_NAMES}
    lc = Lifecycle(steps, rec, on_quarantine=lambda node, reason: calls.append(("cordon", reason)) or "cordoned",
                   on_drain=lambda node: calls.append(("drain",)) or "drained")
    return rec, lc, calls


def test_the_table_allows_active_to_inspection():
    assert (State.ACTIVE, State.INSPECTION) in ALLOWED


def test_a_serving_node_goes_to_inspection_cordoned_drained_and_journaled():
    rec, lc, calls = site()
    assert lc.inspect("n1", WHY, by="NVSentinel hand-off") == State.INSPECTION
    n = rec.nodes["n1"]
    assert (n.stage, n.status) == ("inspection", "failed") and "bringup-quarantine" in n.tags
    assert "bringup-reburnin" not in n.tags          # no re-test is queued for it
    assert n.custom_fields["bringup_reason"] == "NVSentinel hand-off: " + WHY[0]
    assert calls == [("cordon", "NVSentinel hand-off: " + WHY[0]), ("drain",)]
    kind, text = n.journal[-1]
    assert kind == "danger" and text.startswith("## NVSentinel hand-off: sent to hardware inspection")
    assert WHY[0] in text and "Kubernetes: cordoned; drained" in text


def test_a_node_not_serving_is_left_as_it_is():
    rec, lc, calls = site("burned_in")
    assert lc.inspect("n1", WHY, by="NVSentinel hand-off") == State.BURNED_IN
    assert rec.nodes["n1"].stage == "burned_in" and calls == [] and rec.nodes["n1"].journal == []


def test_the_repair_is_the_way_out_and_the_re_test_admits_it():
    rec, lc, _ = site()
    lc.inspect("n1", WHY, by="NVSentinel hand-off")
    assert lc.repaired("n1", "PSU 2 replaced", "alice") == State.PROVISIONED
    state = State.PROVISIONED
    while path(state):
        for st in lc.pending_steps("n1", state):
            state = State(lc.run_step("n1", state, st.name).state)
    assert state == State.ACTIVE and rec.nodes["n1"].custom_fields["bringup_reason"] == ""
