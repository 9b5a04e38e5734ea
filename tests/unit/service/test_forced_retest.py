"""A forced re-test is journaled with who asked (issue #27, item 5): the operator named by
``$BRINGUP_OPERATOR`` (the CLI's ``--operator``), else the OS user."""

from __future__ import annotations

from lifecycle_fakes import MemoryRecords

from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, State
from bringup.lifecycle.results import StepResult
from bringup.settings import operator


def lifecycle() -> tuple[MemoryRecords, Lifecycle]:
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = "quarantined"
    steps = {s: (lambda node, p, s=s: StepResult(node=node.name, step=s, ok=True)) for s in STEP_NAMES}
    return rec, Lifecycle(steps, rec)


def test_a_forced_re_test_names_the_operator_who_asked(monkeypatch):
    monkeypatch.setenv("BRINGUP_OPERATOR", "carol")
    rec, lc = lifecycle()
    assert lc.start("n1", force=True) == State.PLANNED
    (entry,) = [t for _, t in rec.nodes["n1"].journal if t.startswith("## Forced re-test")]
    assert "Asked by carol, from quarantined" in entry and "does not count" in entry


def test_without_the_variable_the_os_user_asked(monkeypatch):
    monkeypatch.delenv("BRINGUP_OPERATOR", raising=False)
    monkeypatch.setattr("getpass.getuser", lambda: "dave")
    assert operator() == "dave"
    rec, lc = lifecycle()
    lc.start("n1", force=True)
    assert any("Asked by dave" in t for _, t in rec.nodes["n1"].journal)
    rec.nodes["n1"].stage = "planned"
    rec.nodes["n1"].journal.clear()
    lc.start("n1", force=True)                         # already planned: nothing forced, nothing journaled
    assert rec.nodes["n1"].journal == []
