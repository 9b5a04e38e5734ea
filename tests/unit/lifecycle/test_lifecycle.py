"""The lifecycle table and its engine: transitions, the one writer of the stage,
results as values, whose fault an error is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lifecycle_fakes import MemoryRecords

from bringup.errors import ConfigError, NetBoxAuthError, RedfishAuthError, SSHDropped
from bringup.lifecycle import engine as lc_mod
from bringup.lifecycle.engine import (
    ALLOWED,
    REBURNIN_TAG,
    STEP_NAMES,
    TABLE,
    Lifecycle,
    LifecycleError,
    State,
    check,
    parse_state,
    path,
)
from bringup.lifecycle.results import Evidence, StepResult

REPO = Path(__file__).resolve().parents[3]


def ok(step, **kw):
    return lambda node, params: StepResult(node=node.name, step=step, ok=True, **kw)


def steps(**override):
    fns = {name: ok(name) for name in STEP_NAMES}
    fns.update(override)
    return fns


def walk(lc: Lifecycle, name: str, until: State = State.ACTIVE) -> State:
    state = lc.state_of(name)
    while state != until and lc.handler(state):
        for st in lc.pending_steps(name, state):
            state = State(lc.run_step(name, state, st.name).state)
            if not lc.handler(state) or state in (State.QUARANTINED,):
                return state
    return state


def test_table_is_consistent_and_every_step_has_a_real_function():
    from bringup.pipeline import STEPS
    assert set(STEP_NAMES) == set(STEPS)
    for state, handler in TABLE.items():
        assert handler.steps, state
        assert (state, handler.success) in ALLOWED
        assert (state, State.QUARANTINED) in ALLOWED
    assert path(State.PLANNED) == [State.PLANNED, State.DISCOVERED, State.PROVISIONED, State.BURNED_IN,
                                   State.FABRIC, State.VALIDATING]
    assert path(State.ACTIVE) == []


def test_netbox_choice_set_is_derived_from_the_states():
    from bringup.netbox.schema import load_schema
    stage = next(cs for cs in load_schema().choice_sets if cs["name"] == "bringup-stage")
    assert [c[0] for c in stage["choices"]] == [s.value for s in State]


def test_transitions_outside_the_table_are_refused():
    check(State.PLANNED, State.DISCOVERED)
    with pytest.raises(LifecycleError):
        check(State.PLANNED, State.ACTIVE)
    with pytest.raises(LifecycleError):
        check(State.QUARANTINED, State.ACTIVE)


def test_stage_values_parse_and_legacy_names_map():
    assert parse_state("burned_in") is State.BURNED_IN
    assert parse_state("admitted") is State.ACTIVE
    assert parse_state(None) is State.PLANNED
    with pytest.raises(LifecycleError, match="halfway"):
        parse_state("halfway")


def test_a_healthy_node_walks_to_active_and_only_transitions_write_the_stage():
    rec = MemoryRecords("n1")
    lc = Lifecycle(steps(), rec)
    assert walk(lc, "n1") is State.ACTIVE
    stages = [w["stage"] for _n, w in rec.writes if w["stage"]]
    assert stages == ["discovered", "provisioned", "burned_in", "fabric", "validating", "active"]
    assert rec.nodes["n1"].status == "active"


def test_an_unfit_step_quarantines_with_its_reasons_and_isolates_the_node():
    rec = MemoryRecords("n1")
    isolated = []
    lc = Lifecycle(steps(judge=lambda node, p: StepResult(node=node.name, step="judge", ok=False,
                                                           reasons=["busbw 300 < 360"],
                                                           fields={"burnin_status": "fail"})),
                   rec, on_quarantine=lambda node, reason: isolated.append(reason) or "cordoned")
    assert walk(lc, "n1") is State.QUARANTINED
    n = rec.nodes["n1"]
    assert n.status == "failed" and "bringup-quarantine" in n.tags
    assert n.custom_fields["bringup_reason"] == "busbw 300 < 360"
    assert n.custom_fields["burnin_status"] == "fail"       # the verdict is recorded too
    assert isolated == ["busbw 300 < 360"]
    assert any(kind == "danger" and "cordoned" in text for kind, text in n.journal)


def test_a_node_error_of_a_step_is_a_quarantine_not_a_crash():
    def dropped(node, params):
        raise SSHDropped("node n1: the SSH connection dropped during burn-in")
    rec = MemoryRecords("n1")
    lc = Lifecycle(steps(burn_in=dropped), rec)
    assert walk(lc, "n1") is State.QUARANTINED
    assert "dropped" in rec.nodes["n1"].custom_fields["bringup_reason"]


@pytest.mark.parametrize("exc", [RedfishAuthError("BMC refused our credentials"), ConfigError("bad settings"),
                                 NetBoxAuthError("NetBox refused the API token")])
def test_an_error_on_our_side_holds_the_node_where_it_is(exc):
    def failing(node, params):
        raise exc
    rec = MemoryRecords("n1")
    isolated = []
    lc = Lifecycle(steps(discover=failing), rec, on_quarantine=lambda n, r: isolated.append(r) or "")
    with pytest.raises(type(exc)):
        lc.run_step("n1", State.PLANNED, "discover")
    n = rec.nodes["n1"]
    assert n.stage == "planned" and n.status == "planned" and not isolated
    assert n.custom_fields["bringup_reason"].startswith("held in planned")


def test_a_transient_error_is_raised_for_the_orchestrator_and_writes_nothing():
    from bringup.errors import RedfishTimeoutError

    def slow(node, params):
        raise RedfishTimeoutError("no answer")
    rec = MemoryRecords("n1")
    lc = Lifecycle(steps(discover=slow), rec)
    with pytest.raises(RedfishTimeoutError):
        lc.run_step("n1", State.PLANNED, "discover")
    assert rec.writes == []


def test_a_rerun_skips_the_steps_already_done_in_the_state():
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = "discovered"
    lc = Lifecycle(steps(bios=ok("bios", evidence=[Evidence(kind="bios", document={"ok": True})])), rec)
    lc.run_step("n1", State.DISCOVERED, "firmware")
    lc.run_step("n1", State.DISCOVERED, "bios")
    lc.run_step("n1", State.DISCOVERED, "install")
    # a crash here; another worker resumes
    assert [s.name for s in Lifecycle(steps(), rec).pending_steps("n1", State.DISCOVERED)] == ["configure"]
    lc.run_step("n1", State.DISCOVERED, "configure")
    assert rec.nodes["n1"].stage == "provisioned"
    assert [s.name for s in lc.pending_steps("n1", State.PROVISIONED)] == ["burn_in"]
    assert rec.evidence["n1"]["bios"] == {"ok": True}


def test_a_step_of_another_state_is_refused():
    rec = MemoryRecords("n1")
    lc = Lifecycle(steps(), rec)
    with pytest.raises(LifecycleError, match="not burned_in"):
        lc.run_step("n1", State.BURNED_IN, "judge")
    with pytest.raises(LifecycleError, match="not a step"):
        lc.run_step("n1", State.PLANNED, "judge")


def test_force_drains_a_serving_node_before_restarting_it():
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = "active"
    drained = []
    lc = Lifecycle(steps(), rec, on_drain=lambda node: drained.append(node.name) or "2 pods evicted")
    assert lc.start("n1") is State.ACTIVE and not drained
    assert lc.start("n1", force=True) is State.PLANNED
    assert drained == ["n1"] and rec.nodes["n1"].custom_fields["burnin_status"] == "pending"


def test_reburnin_enters_draining_and_comes_back_through_validating():
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = "active"
    lc = Lifecycle(steps(), rec)
    assert lc.begin_reburnin("n1") is State.DRAINING
    # tagged: a run that stops here (a drain blocked by a PDB) is resumed by the next one
    assert REBURNIN_TAG in rec.nodes["n1"].tags
    assert walk(lc, "n1") is State.ACTIVE
    assert REBURNIN_TAG not in rec.nodes["n1"].tags
    stages = [w["stage"] for _n, w in rec.writes if w["stage"]]
    assert stages == ["draining", "provisioned", "burned_in", "fabric", "validating", "active"]


def test_only_the_lifecycle_writes_the_stage():
    """No other module of the library or the flows passes a stage to a NetBox write."""
    offenders = []
    for src in [*REPO.joinpath("bringup").rglob("*.py"), *REPO.joinpath("flows").rglob("*.py")]:
        if src.relative_to(REPO).as_posix() in ("bringup/lifecycle/engine.py", "bringup/lifecycle/table.py", "bringup/netbox/records.py"):
            continue
        text = src.read_text()
        # the adapter maps the field, and the device records read it
        mapper = src.relative_to(REPO).as_posix() in ("bringup/netbox/adapter.py", "bringup/netbox/devices.py")
        literal = "bringup_stage" in text and not mapper
        if re.search(r"(update_node|\.write)\([^)]*\bstage=", text) or literal:
            offenders.append(str(src.relative_to(REPO)))
    assert offenders == []


def test_missing_step_functions_are_refused():
    with pytest.raises(ValueError, match="judge"):
        Lifecycle({k: v for k, v in steps().items() if k != "judge"}, MemoryRecords())


def test_module_docstring_draws_every_state():
    for state in State:
        assert state.value in (lc_mod.__doc__ or ""), state


def test_a_repeat_offender_goes_to_inspection_after_its_quarantine():
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = "burned_in"
    seen = []

    def offender(node):
        seen.append(node.name)
        return "n1 was quarantined 2 times in 30 days: marked for hardware inspection"
    lc = Lifecycle(steps(), rec, repeat_offender=offender)
    lc.quarantine("n1", State.BURNED_IN, ["XID 79"])
    assert seen == ["n1"] and lc.state_of("n1") is State.INSPECTION
    assert "hardware inspection" in rec.nodes["n1"].custom_fields["bringup_reason"]
    assert "XID 79" in rec.nodes["n1"].custom_fields["bringup_reason"]


def test_a_repeat_offender_rule_that_cannot_be_read_leaves_the_node_quarantined():
    from bringup.errors import NetBoxUnavailable
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = "burned_in"

    def offender(node):
        raise NetBoxUnavailable("change log unreachable")
    lc = Lifecycle(steps(), rec, repeat_offender=offender)
    lc.quarantine("n1", State.BURNED_IN, ["XID 79"])
    assert lc.state_of("n1") is State.QUARANTINED
