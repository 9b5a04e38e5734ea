"""A live holder never loses its lease (issue #24, item 1): the lease's numbers come from the
NetBox client's worst case, the renewer never dies silently and says at once when it stops,
and the fence counts the holder's own last successful renewal."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta

from bringup.errors import NetBoxUnavailable
from bringup.netbox import http_retry
from bringup.netbox import lease as leases
from bringup.netbox.lease import Claimant, Lease, fence
from bringup.netbox.lease_renewer import Renewer

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
A = Claimant(run="run-a", host="ctl-1", pid=100, pidns="pid:[1]")


def wait_for(cond, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.005)
    return cond()


def test_a_lease_renewed_at_the_netbox_clients_worst_case_never_comes_within_the_fence():
    """Each renewal takes its worst case (its read and its conditional write, each riding out
    an outage through the records layer), then the renewer waits its cadence: the lease
    NetBox holds must still have the fence's margin when the next renewal lands."""
    worst = http_retry.WORST_CASE_S
    start = 0.0
    expiry_held = leases.TTL_S   # the claim's, at 0
    for _ in range(5):
        changed = start + worst        # the read came back: the new expiry is set from now
        landed = changed + worst       # the conditional write is answered
        assert expiry_held - landed >= leases.FENCE_MARGIN_S, (expiry_held, landed)
        expiry_held = changed + leases.TTL_S
        start = landed + leases.RENEW_EVERY_S
    # and the numbers move with the client's: no constant beside it
    assert leases.RENEW_WORST_S == 2 * http_retry.WORST_CASE_S
    assert leases.FENCE_MARGIN_S >= http_retry.CALL_WORST_S
    assert leases.RENEW_EVERY_S < leases.TTL_S / 4


def test_any_error_of_a_renewal_is_logged_with_the_node_and_tried_again(caplog):
    calls: list[int] = []

    def renew():
        calls.append(1)
        if len(calls) == 1:
            raise KeyError("custom_fields")          # a bug, not a NetBox error
        if len(calls) == 2:
            raise NetBoxUnavailable("NetBox did not answer in time")
    caplog.set_level(logging.WARNING)
    with Renewer(renew, lambda: None, every=0.01) as r:     # as flows.walk built it before
        assert wait_for(lambda: len(calls) >= 4), "the renewer died after an error it did not know"
    calls.clear()
    with Renewer(renew, lambda: None, every=0.01, node="gpu-r01-n06") as r:
        assert wait_for(lambda: len(calls) >= 4), "the renewer died after an error it did not know"
        assert r.alive and r.stopped == ""
    messages = [m for m in caplog.messages if "could not renew" in m]
    assert any("gpu-r01-n06" in m and "KeyError" in m for m in messages), caplog.messages
    assert any("gpu-r01-n06" in m and "NetBoxUnavailable" in m for m in messages), caplog.messages


def test_a_renewer_that_stops_says_why_at_once():
    told: list[str] = []
    lost = threading.Event()

    def renew():
        lost.set()
        return "the lease of n1 was taken by run run-b on ctl-2"
    with Renewer(renew, lambda: None, every=0.01, node="n1", on_stop=told.append) as r:
        assert wait_for(lambda: bool(told))
        assert told == ["the lease of n1 was taken by run run-b on ctl-2"] and r.stopped == told[0]
        assert wait_for(lambda: not r.alive)


def test_a_renewer_whose_thread_fails_says_so(monkeypatch):
    told: list[str] = []

    class Dying(BaseException):
        pass

    def tick(self):
        raise Dying("interpreter shutting down")
    monkeypatch.setattr(Renewer, "_tick", tick)
    monkeypatch.setattr(threading, "excepthook", lambda args: None)   # the thread's own report
    with Renewer(lambda: None, lambda: None, every=0.01, node="n1", on_stop=told.append):
        assert wait_for(lambda: bool(told))
    assert "the lease renewer of n1 failed: Dying" in told[0]


def test_a_normal_end_is_not_a_stop():
    told: list[str] = []
    released = threading.Event()
    with Renewer(lambda: None, released.set, every=0.01, node="n1", on_stop=told.append):
        time.sleep(0.03)
    assert released.is_set() and told == []


def test_the_fence_counts_the_holders_own_last_successful_renewal():
    """A read of the lease that came back slowly shows an older expiry than the holder's
    own last renewal wrote: the renewal counts (renewals only push the expiry on)."""
    old = Lease(holder=A.holder, run=A.run, host=A.host, since=NOW, expires=NOW + timedelta(seconds=20)).field()
    assert "runs out" in fence("n1", old, A.holder, NOW)
    renewed_to = NOW + timedelta(seconds=leases.TTL_S)
    assert fence("n1", old, A.holder, NOW, known_until=renewed_to) == ""
    # what the holder knows never outweighs a lease that is no longer its own
    theirs = dict(old, holder="run-b@ctl-2:200", run="run-b", host="ctl-2")
    assert "taken by run run-b" in fence("n1", theirs, A.holder, NOW, known_until=renewed_to)
    assert "cleared" in fence("n1", None, A.holder, NOW, known_until=renewed_to)
