"""The lifecycle's lease fence decides on the lease as NetBox holds it now (issue #24).

The run of the issue: ``gpu-r01-n06``'s ``configure`` step was refused with "the lease runs out
at 08:28:56 (not renewed)" although the same run had renewed it to 08:31:44. The fence before
a step judged the lease in the node's record, and ``NetBoxRecords.node`` reads that record in
several requests: the device (its custom fields, the lease among them), then its interfaces.
With NetBox loaded, the interfaces read timed out at 30 s and was sent again; meanwhile the
renewer renewed the lease, and the fence then compared the old expiry with the time after
the slow read. These tests replay it on in-memory records with a clock the test moves.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from lifecycle_fakes import MemoryRecords

from bringup.errors import NetBoxUnavailable
from bringup.lifecycle.engine import PROGRESS, STEP_NAMES, Lifecycle, State
from bringup.lifecycle.results import StepResult
from bringup.netbox import lease as leases
from bringup.netbox.lease import Claimant, Lease, LeaseLost

T0 = datetime(2026, 12, 3, 8, 20, tzinfo=UTC)
A = Claimant(run="run-a", host="ctl-1", pid=100, pidns="pid:[1]")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class SlowNodeReads(MemoryRecords):
    """``node()`` as ``NetBox.nodes`` reads it: the device and its custom fields first, then
    its interfaces, the second read slow (``during_read`` is what happens meanwhile)."""

    def __init__(self, *names: str) -> None:
        super().__init__(*names)
        self.during_read = None

    def node(self, name: str):
        copy = super().node(name)          # GET /dcim/devices/?name=...: the lease as it is now
        hook, self.during_read = self.during_read, None
        if hook is not None:               # GET /dcim/interfaces/?device_id=...: timed out, sent again
            hook()
        return copy


def ok_steps(ran: list[str]):
    def step(name):
        def fn(node, params):
            ran.append(name)
            return StepResult(node=node.name, step=name, ok=True)
        return fn
    return {name: step(name) for name in STEP_NAMES}


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(leases, "utcnow", c)
    return c


def installed(rec: MemoryRecords) -> None:
    node = rec.nodes["n1"]
    node.stage = "discovered"
    node.custom_fields["bringup_evidence"] = {PROGRESS: {"discovered": ["firmware", "bios", "install"]}}


def test_a_lease_renewed_while_the_node_was_read_is_not_judged_on_the_old_copy(clock):
    rec = SlowNodeReads("n1")
    installed(rec)
    ran: list[str] = []
    lc = Lifecycle(steps=ok_steps(ran), records=rec)
    assert lc.acquire("n1", A) is None
    # late in the lease (renewals were slow): the device read sees little time left...
    clock.advance(leases.TTL_S - leases.FENCE_MARGIN_S - 50)

    def interfaces_read_times_out_twice():  # ...the renewer renews meanwhile, and time passes
        clock.advance(50)
        assert lc.renew("n1", A.holder) is None
        clock.advance(50)
    rec.during_read = interfaces_read_times_out_twice
    result = lc.run_step("n1", State.DISCOVERED, "configure", holder=A.holder)
    assert ran == ["configure"] and result.state == "provisioned"
    held = Lease.parse(rec.lease(rec.node("n1")))
    assert held.holder == A.holder and held.expires - clock.now > timedelta(seconds=leases.FENCE_MARGIN_S)


def test_a_slow_lease_read_counts_the_runs_own_last_renewal(clock):
    """The fence's own read of the lease came back late (its snapshot older than the run's
    last renewal): the renewal the run saw succeed counts."""
    rec = MemoryRecords("n1")
    installed(rec)
    lc = Lifecycle(steps=ok_steps([]), records=rec)
    assert lc.acquire("n1", A) is None
    clock.advance(leases.TTL_S - leases.FENCE_MARGIN_S - 10)
    stale = rec.lease(rec.node("n1"))
    assert lc.renew("n1", A.holder) is None
    clock.advance(20)
    rec.refresh = lambda node: stale   # the answer NetBox gave before it applied the renewal
    assert lc.run_step("n1", State.DISCOVERED, "configure", holder=A.holder).state == "provisioned"


def test_a_walk_whose_lease_is_about_to_run_out_holds_the_node_before_it_writes(clock):
    rec = MemoryRecords("n1")
    installed(rec)
    ran: list[str] = []
    lc = Lifecycle(steps=ok_steps(ran), records=rec)
    assert lc.acquire("n1", A) is None

    def netbox_away(node, holder, ttl):
        raise NetBoxUnavailable("NetBox did not answer in time")
    rec.renew = netbox_away
    with pytest.raises(NetBoxUnavailable):
        lc.renew("n1", A.holder)
    clock.advance(leases.TTL_S - leases.FENCE_MARGIN_S + 1)
    writes = len(rec.writes)
    with pytest.raises(LeaseLost, match="runs out") as err:
        lc.run_step("n1", State.DISCOVERED, "configure", holder=A.holder)
    assert ran == []   # the step did not start on a lease that would run out under it
    reason = rec.nodes["n1"].custom_fields["bringup_reason"]
    assert reason.startswith("held in discovered: the lease of n1 runs out at ")
    assert "the last renewal failed: NetBoxUnavailable: NetBox did not answer in time" in reason
    assert rec.writes[writes:] and all(set(w["fields"]) == {"bringup_reason"} for _, w in rec.writes[writes:])
    assert rec.nodes["n1"].journal[-1][0] == "warning" and "runs out" in rec.nodes["n1"].journal[-1][1]
    assert "another run" not in str(err.value) and "NetBox did not take" in err.value.hint
    report = lc.report("n1")
    assert report.verdict == "held" and "runs out" in report.reasons[0]


def test_a_renewer_that_stopped_is_noticed_at_the_next_step(clock):
    rec = MemoryRecords("n1")
    installed(rec)
    ran: list[str] = []
    lc = Lifecycle(steps=ok_steps(ran), records=rec)
    assert lc.acquire("n1", A) is None
    renewer = lc.renewer("n1", A.holder)
    renewer.on_stop("the lease renewer of n1 failed: MemoryError: ")   # as its thread reports it
    with pytest.raises(LeaseLost, match="no longer renewed"):
        lc.run_step("n1", State.DISCOVERED, "configure", holder=A.holder)
    assert ran == [] and "no longer renewed" in rec.nodes["n1"].custom_fields["bringup_reason"]


def test_the_walks_renewer_renews_through_the_lifecycle_and_gives_the_lease_back(clock):
    rec = MemoryRecords("n1")
    lc = Lifecycle(steps=ok_steps([]), records=rec)
    assert lc.acquire("n1", A) is None
    renewed = threading.Event()
    real = rec.renew

    def renew(node, holder, ttl):
        clock.advance(60)
        out = real(node, holder, ttl)
        renewed.set()
        return out
    rec.renew = renew
    with lc.renewer("n1", A.holder, every=0.01):
        assert renewed.wait(5)
    assert rec.lease(rec.node("n1")) is None and ("n1", A.holder) not in lc._tenancy
