"""A walk that holds a node reads NetBox little per step (issue #25): the full node record
(the device list query, its interfaces) once, when the lease is taken; each step then one
small read of what changes (stage, custom fields, status, tags), which the fence judges too.
Every request on NetBox's device endpoints costs it a few hundred ms of CPU, so these
counts are the cost of a commission (docs/benchmarks.md)."""

from __future__ import annotations

import pytest
from lifecycle_fakes import MemoryRecords

from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, State
from bringup.lifecycle.leasing import FRESH_S
from bringup.lifecycle.results import StepResult
from bringup.netbox.lease import Claimant, LeaseLost

A = Claimant(run="run-a", host="ctl-1", pid=100, pidns="pid:[1]")
B = Claimant(run="run-b", host="ctl-2", pid=200, pidns="pid:[1]")


class CountingRecords(MemoryRecords):
    def __init__(self, *names: str) -> None:
        super().__init__(*names)
        self.full_reads = 0

    def node(self, name: str):
        self.full_reads += 1
        return super().node(name)


def steps(seen: list):
    def step(name):
        def fn(node, params):
            seen.append((name, node.stage, dict(node.custom_fields)))
            return StepResult(node=node.name, step=name, ok=True, fields={f"seen_{name}": True})
        return fn
    return {name: step(name) for name in STEP_NAMES}


def walk(lc: Lifecycle, name: str, holder: str) -> list[str]:
    state, ran = State.PLANNED, []
    while state != State.ACTIVE:
        before = state
        for st in lc.pending_steps(name, state, holder=holder):
            state = State(lc.run_step(name, state, st.name, holder=holder).state)
            ran.append(st.name)
            if state != before:
                break
    return ran


def test_a_held_walk_reads_the_whole_node_once_and_one_small_read_per_fence():
    rec = CountingRecords("n1")
    seen: list = []
    lc = Lifecycle(steps=steps(seen), records=rec)
    assert lc.acquire("n1", A) is None
    reads = rec.full_reads
    ran = walk(lc, "n1", A.holder)
    assert rec.nodes["n1"].stage == "active" and len(ran) >= 8
    assert rec.full_reads == reads   # never the full record again while the lease is held
    assert rec.refreshes == 2 * len(ran)   # the fence before each step and before its record
    # each step saw the node as NetBox held it then: the stage and what earlier steps wrote
    for i, (name, _stage, fields) in enumerate(seen):
        assert all(fields.get(f"seen_{prev}") for prev, _, _ in seen[:i]), name


def test_without_a_lease_each_step_reads_the_node_in_full():
    rec = CountingRecords("n1")
    lc = Lifecycle(steps=steps([]), records=rec)
    lc.run_step("n1", State.PLANNED, "discover")
    assert rec.full_reads == 1


def test_a_change_made_in_netbox_during_the_walk_is_seen_by_the_next_step():
    """The kept record is never trusted for what changes: a stage moved by hand in NetBox
    between two steps stops the walk, as it did when each step read the node in full."""
    rec = CountingRecords("n1")
    lc = Lifecycle(steps=steps([]), records=rec)
    assert lc.acquire("n1", A) is None
    assert lc.run_step("n1", State.PLANNED, "discover", holder=A.holder).state == "discovered"
    rec.nodes["n1"].stage = "quarantined"   # someone, in NetBox's UI
    with pytest.raises(Exception, match="quarantined, not discovered"):
        lc.run_step("n1", State.DISCOVERED, "firmware", holder=A.holder)


def test_a_lease_taken_over_between_steps_stops_the_walk_from_the_small_read():
    rec = CountingRecords("n1")
    lc = Lifecycle(steps=steps([]), records=rec)
    assert lc.acquire("n1", A) is None
    assert lc.run_step("n1", State.PLANNED, "discover", holder=A.holder).state == "discovered"
    rec.nodes["n1"].custom_fields["bringup_lease"] = None   # cleared by hand...
    assert lc.acquire("n1", B) is None                       # ...and taken by another run
    with pytest.raises(LeaseLost, match="run-b"):
        lc.run_step("n1", State.DISCOVERED, "firmware", holder=A.holder)
    assert rec.nodes["n1"].stage == "discovered"   # nothing recorded by the run that lost it


class AnsweringRecords(CountingRecords):
    """As NetBox 4.7 answers a device PATCH: with every custom field as it now holds them
    (tests/fixtures/netbox/bulk-patch-netbox-4.7.json), so the written record is current."""

    def write(self, node, **change) -> bool:
        super().write(node, **change)
        n = self.nodes[node.name]
        node.custom_fields, node.stage = dict(n.custom_fields), n.stage
        return True


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_step_right_after_the_runs_own_answered_write_takes_the_answer_for_a_read():
    """The record NetBox answered the last step's write with is as current as a read made
    then: the next step's first check takes it (one read a step fewer, issue #25); the check
    before each result is recorded still reads."""
    rec = AnsweringRecords("n1")
    clock = Clock()
    lc = Lifecycle(steps=steps([]), records=rec, clock=clock)
    assert lc.acquire("n1", A) is None
    ran = walk(lc, "n1", A.holder)
    assert rec.nodes["n1"].stage == "active"
    # the first step reads (nothing written yet); every later one only before its record
    assert rec.refreshes == len(ran) + 1


def test_an_answer_older_than_fresh_s_is_read_again():
    rec = AnsweringRecords("n1")
    clock = Clock()
    lc = Lifecycle(steps=steps([]), records=rec, clock=clock)
    assert lc.acquire("n1", A) is None
    lc.run_step("n1", State.PLANNED, "discover", holder=A.holder)
    before = rec.refreshes
    clock.t += FRESH_S          # the next step waited that long for a slot
    lc.run_step("n1", State.DISCOVERED, "firmware", holder=A.holder)
    assert rec.refreshes == before + 2


def test_a_lease_cleared_right_after_an_answered_write_still_stops_the_record():
    """The check before recording always reads: a lease cleared by hand (and taken by
    another run) moments after the last write is seen before anything is recorded."""
    rec = AnsweringRecords("n1")
    lc = Lifecycle(steps=steps([]), records=rec, clock=Clock())
    assert lc.acquire("n1", A) is None
    lc.run_step("n1", State.PLANNED, "discover", holder=A.holder)
    rec.nodes["n1"].custom_fields["bringup_lease"] = None
    assert lc.acquire("n1", B) is None
    writes = len(rec.writes)
    with pytest.raises(LeaseLost, match="run-b"):
        lc.run_step("n1", State.DISCOVERED, "firmware", holder=A.holder)
    assert len(rec.writes) == writes and rec.nodes["n1"].stage == "discovered"


def test_start_uses_the_record_read_with_the_lease():
    rec = CountingRecords("n1")
    lc = Lifecycle(steps=steps([]), records=rec)
    assert lc.acquire("n1", A) is None
    reads = rec.full_reads
    assert lc.start("n1", holder=A.holder) == State.PLANNED
    assert lc.begin_reburnin("n1", A.holder) == State.PLANNED
    assert rec.full_reads == reads
    assert lc.start("n1") == State.PLANNED and rec.full_reads == reads + 1   # no lease: a read


def test_the_walks_row_takes_the_judges_figures_from_its_result():
    seen = {}

    class Rec(AnsweringRecords):
        def report(self, node, verdict, figures=None):
            seen["figures"] = figures
            return super().report(node, verdict, figures)
    rec = Rec("n1")
    lc = Lifecycle(steps=steps([]), records=rec, clock=Clock())
    judged = StepResult(node="n1", step="judge", ok=True, figures={"gflops": 1.0}, state="fabric")
    lc.report("n1", known=[judged])
    assert seen["figures"] == {"gflops": 1.0}
    lc.report("n1", known=[])
    assert seen["figures"] is None   # not this run's: read from the verdict document


def test_many_rows_are_one_read_of_their_records():
    rec = CountingRecords("n1", "n2", "n3")
    rec.nodes["n2"].stage = "active"
    rec.nodes["n3"].stage = "quarantined"
    rec.evidence["n2"] = {"verdict": {"figures": {"busbw": 370}}}
    lc = Lifecycle(steps=steps([]), records=rec)
    rows = lc.reports(["n1", "n2", "n3"])
    assert [(r.node, r.verdict) for r in rows] == [("n1", "pending"), ("n2", "admitted"), ("n3", "quarantined")]
    assert rows[1].figures == {"busbw": 370} and rows[0].figures == {}
    assert rec.full_reads == 0 and rec.many_reads == 1
