"""``bringup node repaired`` (issue #27, item 5): inspection's one way out. The repair is
journaled with who and what, the hardware verdict is cleared, and the node walks again from
provisioned through re-burn-in and the gate: a pass admits it with clean reason fields (the
journal keeps the old failure), a fail returns it to inspection."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from lifecycle_fakes import MemoryRecords

import bringup.context
import bringup.pipeline
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, LifecycleError, State, path
from bringup.lifecycle.results import StepResult
from bringup.service import guard
from bringup_cli import main

OLD = "XID 79 on GPU 3: fell off the bus"


def inspected(ok: bool = True) -> tuple[MemoryRecords, Lifecycle]:
    rec = MemoryRecords("n1")
    n = rec.nodes["n1"]
    n.stage, n.status, n.tags = "inspection", "failed", ["bringup-quarantine"]
    n.custom_fields.update(bringup_reason=f"quarantined twice; last: {OLD}", burnin_status="fail",
                           burnin_summary=f"fail: {OLD}")
    n.journal.append(("danger", f"## Quarantined in state burned_in\n\n- {OLD}\n"))
    steps = {s: (lambda node, p, s=s: StepResult(node=node.name, step=s, ok=True)) for s in STEP_NAMES}
    steps["judge"] = lambda node, p: StepResult(node=node.name, step="judge", ok=ok, reasons=[] if ok else [OLD],
                                                fields={"burnin_status": "pass" if ok else "fail"})
    return rec, Lifecycle(steps, rec)


def walk(lc: Lifecycle, name: str) -> State:
    """What the commission flow does with the node: its states' steps, up to active."""
    state = lc.state_of(name)
    while path(state):
        for st in lc.pending_steps(name, state):
            state = State(lc.run_step(name, state, st.name).state)
        if state in (State.QUARANTINED, State.INSPECTION):
            break
    return state


def test_a_repair_is_journaled_clears_the_verdict_and_a_pass_admits_with_a_clean_reason():
    rec, lc = inspected()
    assert lc.repaired("n1", "GPU 3 replaced, RMA 1234", "alice") == State.PROVISIONED
    n = rec.nodes["n1"]
    assert n.custom_fields["burnin_status"] == "pending" and "bringup-quarantine" not in n.tags
    assert any("By alice: GPU 3 replaced, RMA 1234" in text for _, text in n.journal)
    assert walk(lc, "n1") == State.ACTIVE
    assert n.custom_fields["bringup_reason"] == "" and OLD not in n.custom_fields["burnin_summary"]
    assert any(OLD in text for _, text in n.journal)                 # the journal keeps the old failure


def test_only_a_node_in_inspection_is_marked_repaired_and_the_note_is_required():
    rec, lc = inspected()
    rec.nodes["n1"].stage = "active"
    with pytest.raises(LifecycleError, match="n1 is active, not inspection"):
        lc.repaired("n1", "fixed", "alice")
    rec.nodes["n1"].stage = "inspection"
    with pytest.raises(LifecycleError, match="say what was repaired"):
        lc.repaired("n1", "  ", "alice")


def test_a_repaired_node_that_fails_its_re_test_goes_back_to_inspection():
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    at = [(now - timedelta(days=d)).isoformat() for d in (90, 80, 70, 1, 0.5)]
    changes = [(at[0], "planned"), (at[1], "active"), (at[2], "quarantined"), (at[2], "inspection"),
               (at[3], "provisioned"), (at[4], "quarantined")]
    netbox = SimpleNamespace(stage_changes=lambda ids: {1: changes}, journal_entries=lambda i: [],
                             journal=lambda *a, **k: None)
    ctx = SimpleNamespace(netbox=netbox, evidence=SimpleNamespace(has=lambda f, k: False))
    why = guard.repeat_offender(ctx, SimpleNamespace(id=1, name="n1", custom_fields={}), at=now)
    assert why and "after a repair" in why                    # one quarantine in 30 days, yet inspection


def cli(monkeypatch, capsys, *args: str, ok: bool = True, stage: str = "inspection"):
    rec, lc = inspected(ok)
    rec.nodes["n1"].stage = stage
    monkeypatch.setattr(bringup.context.Context, "from_settings",
                        classmethod(lambda cls, config=None: SimpleNamespace(settings=SimpleNamespace(prefect_api_url=""))))
    monkeypatch.setattr(bringup.pipeline, "lifecycle", lambda ctx: lc)
    import flows.commission
    monkeypatch.setattr(flows.commission, "commission", lambda nodes, **kw: [walk(lc, n) for n in nodes])
    monkeypatch.setenv("BRINGUP_CONFIG", "/nonexistent/settings.yaml")
    monkeypatch.setattr(sys, "argv", ["bringup", "node", "repaired", *args])
    with pytest.raises(SystemExit) as done:
        main()
    out = capsys.readouterr()
    return done.value.code, out.out, out.err, rec


def test_the_command_names_who_repaired_and_exits_0_once_the_node_serves(monkeypatch, capsys):
    code, out, _, rec = cli(monkeypatch, capsys, "n1", "--note", "PSU replaced", "--operator", "bob")
    assert code in (0, None) and "repair recorded by bob" in out and "n1: active" in out
    assert any("By bob: PSU replaced" in text for _, text in rec.nodes["n1"].journal)


def test_a_node_not_in_inspection_is_one_line_and_exit_2(monkeypatch, capsys):
    code, _, err, rec = cli(monkeypatch, capsys, "n1", "--note", "x", stage="active")
    assert code == 2 and len(err.splitlines()) == 1 and "n1 is active, not inspection" in err
    assert rec.nodes["n1"].stage == "active"


def test_a_failed_re_test_is_exit_1(monkeypatch, capsys):
    code, out, _, _ = cli(monkeypatch, capsys, "n1", "--note", "GPU 3 reseated", ok=False)
    assert code == 1 and "the re-test did not pass" in out
