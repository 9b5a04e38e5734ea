"""flows.walk under node leases, without Prefect's server: two runs walking one node (the
second skips it and says who holds it), a run that loses its lease mid-walk, and a
Prefect server lost mid-walk (the node is held with the reason)."""

from __future__ import annotations

import logging
import threading

import pytest
from lifecycle_fakes import MemoryRecords
from runtime_fakes import FakeRuntime

from bringup.lifecycle.engine import STEP_NAMES, Lifecycle
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox import lease as leases
from bringup.netbox.lease import Claimant
from flows import runtime, walk

A = Claimant(run="run-a", host="ctl-1", pid=100, pidns="pid:[1]")
B = Claimant(run="run-b", host="ctl-2", pid=200, pidns="pid:[2]")
#: the real step task's body (the fixture swaps ``walk.run_step`` for a direct call)
RUN_STEP_BODY = walk.run_step.fn


class Rt(FakeRuntime):
    def __init__(self, lc: Lifecycle) -> None:
        self.lc = lc

    def lifecycle(self) -> Lifecycle:
        return self.lc


@pytest.fixture
def fleet(monkeypatch):
    """One node, the real walk over a Lifecycle on in-memory records; each step counted.
    ``who`` is the run the current thread walks as."""
    rec = MemoryRecords("n1")
    ran: list[tuple[str, str]] = []
    hooks: dict[str, object] = {}
    who = threading.local()

    def step(name):
        def fn(node, params):
            ran.append((who.c.run, name))
            if name in hooks:
                hooks[name]()
            return StepResult(node=node.name, step=name, ok=True,
                              evidence=[Evidence(kind=name, document={"by": who.c.run})])
        return fn
    lc = Lifecycle(steps={n: step(n) for n in STEP_NAMES}, records=rec)
    runtime.use(Rt(lc))
    published = []
    monkeypatch.setattr(walk, "get_run_logger", lambda: logging.getLogger("walk-test"))
    monkeypatch.setattr(walk, "publish_node", lambda report, results, prefix="": published.append(report))
    monkeypatch.setattr(walk, "claimant", lambda: who.c)
    monkeypatch.setattr(walk, "run_step", lambda node, rack, state, st, params, config=None, order=0, holder=None:
                        lc.run_step(node, state, st, params, holder=holder))

    def go(c: Claimant, **kw) -> walk.Walk:
        who.c = c
        return walk.walk_node.fn("n1", "r1", {}, **kw)
    yield type("Fleet", (), {"rec": rec, "lc": lc, "ran": ran, "hooks": hooks, "go": staticmethod(go),
                             "published": published})
    runtime.use(None)


def test_a_second_run_skips_a_node_the_first_is_walking_and_says_who_holds_it(fleet):
    inside, let_go = threading.Event(), threading.Event()
    fleet.hooks["burn_in"] = lambda: (inside.set(), let_go.wait(10))
    first: list[walk.Walk] = []
    t = threading.Thread(target=lambda: first.append(fleet.go(A)))
    t.start()
    assert inside.wait(10), "the first run never reached its burn-in"
    second = fleet.go(B, force=True)          # force does not take a node from a live run
    let_go.set()
    t.join(10)
    assert second.report.verdict == "held" and second.results == []
    why = second.report.reasons[0]
    assert "node n1 is held by run run-a on ctl-1 (since " in why and why.count("until") == 1
    assert ": skipped" in why and "force does not take a node" in why
    assert fleet.published[0] is second.report
    # the first run did all the work, once; then gave the node back
    assert first[0].report.verdict == "admitted" and first[0].controller_error == ""
    assert [r for r, _ in fleet.ran] == ["run-a"] * len(fleet.ran)
    assert [s for _, s in fleet.ran].count("burn_in") == 1
    assert fleet.rec.evidence["n1"]["burn_in"] == {"by": "run-a"}
    assert fleet.rec.lease(fleet.rec.node("n1")) is None


def test_a_run_that_loses_its_lease_mid_walk_stops_and_records_nothing_more(fleet):
    def taken_over():  # run A stalled past its lease; run B took the node over
        fleet.rec.nodes["n1"].custom_fields[leases.FIELD] = leases.claim_change(
            "n1", None, B, leases.utcnow())[0]
    fleet.hooks["burn_in"] = taken_over
    w = fleet.go(A)
    assert "taken by run run-b" in w.controller_error        # the run fails loudly
    assert "burn_in" not in fleet.rec.evidence["n1"]          # no burn-in document it did not keep
    assert fleet.rec.nodes["n1"].stage == "provisioned"
    assert fleet.rec.lease(fleet.rec.node("n1"))["holder"] == B.holder   # B's lease left alone
    assert "held in" not in str(fleet.rec.nodes["n1"].custom_fields.get("bringup_reason", ""))


def test_an_expired_lease_of_a_gone_run_is_taken_over(fleet):
    fleet.rec.nodes["n1"].custom_fields[leases.FIELD] = leases.claim_change(
        "n1", None, B, leases.utcnow(), ttl=-1)[0]
    w = fleet.go(A)
    assert w.report.verdict == "admitted"
    assert fleet.rec.lease(fleet.rec.node("n1")) is None


def test_a_prefect_server_lost_while_taking_a_slot_holds_the_node_with_the_reason(fleet, monkeypatch):
    import contextlib

    import httpx

    @contextlib.contextmanager
    def slot(names, **kw):
        if any(n.startswith("burnin") for n in names):
            raise httpx.ConnectError("[Errno 111] Connection refused")
        yield
    monkeypatch.setattr(walk, "slot", slot)
    monkeypatch.setattr(walk, "run_step", RUN_STEP_BODY)   # the real task body, no engine
    w = fleet.go(A)
    node = fleet.rec.nodes["n1"]
    assert node.stage == "provisioned" and "burn_in" not in fleet.rec.evidence["n1"]
    reason = node.custom_fields["bringup_reason"]
    assert "Prefect server unreachable" in reason and "Connection refused" in reason, reason
    assert "n1: burn_in: holding concurrency slots" in w.controller_error
    assert fleet.rec.lease(fleet.rec.node("n1")) is None      # given back all the same


def test_the_engine_losing_the_server_between_steps_holds_the_node_too(fleet, monkeypatch):
    import httpx

    def engine(node, rack, state, st, params, config=None, order=0, holder=None):
        if st == "install":   # the task engine's own call to the server fails
            raise httpx.ReadTimeout("timed out")
        return fleet.lc.run_step(node, state, st, params, holder=holder)
    monkeypatch.setattr(walk, "run_step", engine)
    w = fleet.go(A)
    reason = fleet.rec.nodes["n1"].custom_fields["bringup_reason"]
    assert "Prefect server unreachable" in reason and "orchestrating its steps" in reason, reason
    assert w.controller_error and w.report.verdict != "admitted"


def test_a_walk_to_the_fabric_test_keeps_its_lease_for_the_test_and_the_next_leg(fleet):
    """Through the pools' fabric test the node stays the run's: the first leg keeps its
    lease (renewer and all), the test's share is recorded under it, the second leg takes
    it over; one claim and one release for the whole walk (issue #25)."""
    from bringup.fabric.fabric_step import fabric as fabric_step
    from flows import kept_leases
    claims = []
    cas = fleet.rec._cas
    fleet.rec._cas = lambda node, change: (claims.append(node.name), cas(node, change))[1]
    first = fleet.go(A, until="fabric", keep=True)
    assert first.report.stage == "fabric" and kept_leases.holds("n1", A.holder)
    assert fleet.rec.lease(fleet.rec.node("n1"))["holder"] == A.holder     # still the run's, not given back
    assert len(claims) == 1
    fleet.lc.steps["fabric"] = lambda node, params: fabric_step(None, node, params)
    doc = {"verdict": "pass", "reasons": [], "links": [], "blamed": [], "pairs": []}
    fleet.lc.run_step("n1", "fabric", "fabric", {"fabric": doc}, holder=A.holder)   # as flows.fabric records it
    second = fleet.go(A)
    assert second.report.verdict == "admitted" and not kept_leases.holds("n1", A.holder)
    assert fleet.rec.lease(fleet.rec.node("n1")) is None       # given back once, at the end
    assert len(claims) == 2                                     # the claim, the release: no second claim


def test_a_kept_lease_the_run_does_not_walk_on_is_given_back(fleet):
    from flows import kept_leases
    fleet.go(A, until="fabric", keep=True)
    assert kept_leases.release(["n1"]) == 1
    assert fleet.rec.lease(fleet.rec.node("n1")) is None and not kept_leases.holds("n1", A.holder)


def test_a_walk_outside_a_flow_run_keeps_nothing(fleet):
    """A holder that is not the same from one leg to the next (no flow run) cannot hand a
    lease over: the walk gives it back as before."""
    from flows import kept_leases
    local = Claimant(run="local-abc", host="ctl-1", pid=100, pidns="pid:[1]")
    w = fleet.go(local, until="fabric", keep=True)
    assert w.report.stage == "fabric" and not kept_leases.holds("n1", local.holder)
    assert fleet.rec.lease(fleet.rec.node("n1")) is None
