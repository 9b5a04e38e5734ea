"""Stale state (issue #13, defect 7): read-only commands never move a stage, and a rerun
clears what it will write again before it starts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from lifecycle_fakes import MemoryRecords

from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, LifecycleError, State, path
from bringup.lifecycle.results import StepResult


def steps(**override):
    fns = {n: (lambda node, p, n=n: StepResult(node=node.name, step=n, ok=True)) for n in STEP_NAMES}
    return {**fns, **override}


VERDICT = {"bringup_reason": "busbw 300 < 360", "burnin_status": "fail", "burnin_summary": "fail: busbw 300 < 360",
           "burnin_last": "2026-01-01T00:00:00Z", "gpu_serials": ["S1", "S2"]}


@pytest.mark.parametrize("stage,status", [("quarantined", "failed"), ("active", "active"), ("burned_in", "planned")])
def test_a_forced_rerun_clears_the_reason_and_verdict_it_will_write_again(stage, status):
    rec = MemoryRecords("n1")
    n = rec.nodes["n1"]
    n.stage, n.status, n.tags = stage, status, ["bringup-quarantine", "gpu"]
    n.custom_fields.update(VERDICT)
    lc = Lifecycle(steps(), rec, on_drain=lambda node: "drained")
    assert lc.start("n1", force=True) is State.PLANNED
    assert n.stage == "planned" and n.status == "planned"
    assert n.custom_fields["bringup_reason"] == "" and n.custom_fields["burnin_status"] == "pending"
    assert n.custom_fields["burnin_summary"] == "" and n.custom_fields["burnin_last"] is None
    assert n.custom_fields["gpu_serials"] is None
    assert n.tags == ["gpu"]                                   # the quarantine tag goes; others stay
    # in the very write that moves the stage: never a moment planned with the old verdict
    assert [w["stage"] for _n, w in rec.writes] == ["planned"]


def test_a_rerun_without_force_keeps_a_quarantined_nodes_record():
    rec = MemoryRecords("n1")
    n = rec.nodes["n1"]
    n.stage = "quarantined"
    n.custom_fields.update(VERDICT)
    assert Lifecycle(steps(), rec).start("n1") is State.QUARANTINED
    assert rec.writes == [] and n.custom_fields == VERDICT


def test_a_hold_is_cleared_when_the_node_moves_on():
    rec = MemoryRecords("n1")
    lc = Lifecycle(steps(), rec)
    lc.hold("n1", "discover: BMC 10.0.0.1 refused our credentials")
    assert rec.nodes["n1"].custom_fields["bringup_reason"].startswith("held in planned")
    lc.run_step("n1", State.PLANNED, "discover")                  # the password was fixed
    assert rec.nodes["n1"].stage == "discovered"
    assert rec.nodes["n1"].custom_fields["bringup_reason"] == ""    # the report no longer says "held"


def test_discover_never_moves_a_node_past_planned():
    """The discover flow walks path(state, discovered): nothing for a node past planned;
    and the step itself refuses a node that is not planned."""
    for state in State:
        if state != State.PLANNED:
            assert path(state, State.DISCOVERED) == [], state
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = "active"
    with pytest.raises(LifecycleError, match="not planned"):
        Lifecycle(steps(), rec).run_step("n1", State.PLANNED, "discover")
    assert rec.writes == []


def test_bringup_discover_on_an_admitted_node_lists_it_and_moves_nothing(monkeypatch):
    from typer.testing import CliRunner

    from bringup import pipeline as stages
    from bringup_cli import app, flows_cmd
    rec = MemoryRecords("n1", "n2")
    rec.nodes["n1"].stage = "active"
    ran = []

    def discover(node, params):
        ran.append(node.name)
        return StepResult(node=node.name, step="discover", ok=True)

    lc = Lifecycle(steps(discover=discover), rec)
    monkeypatch.setattr(flows_cmd, "_ctx", lambda config: SimpleNamespace())
    monkeypatch.setattr(stages, "lifecycle", lambda ctx: lc)
    monkeypatch.setattr(stages, "select", lambda ctx, **kw: [SimpleNamespace(name=n, rack="r1", stage=rec.nodes[n].stage)
                                                            for n in ("n1", "n2")])
    res = CliRunner().invoke(app, ["discover", "--site", "s"])
    assert res.exit_code == 0, res.output
    assert ran == ["n2"]                                            # only the planned node
    assert rec.nodes["n1"].stage == "active" and all(name != "n1" for name, _w in rec.writes)
    assert rec.nodes["n2"].stage == "discovered"
    assert "already active" in res.output
