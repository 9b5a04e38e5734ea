"""Node leases: who holds a node, compare-and-swap on the node's version, the NetBox
adapter's conditional writes, and the lifecycle's fence (a run that lost a node records
nothing for it)."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from lifecycle_fakes import MemoryRecords

from bringup.errors import NetBoxPreconditionFailed, NetBoxRequestError, PreconditionFailed
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, State
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox import lease as leases
from bringup.netbox.adapter import NetBox
from bringup.netbox.lease import Claimant, Lease, LeaseHeld, LeaseLost, decide, fence
from bringup.netbox.lease_renewer import Renewer
from bringup.netbox.records import NetBoxRecords

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
A = Claimant(run="run-a", host="ctl-1", pid=100, pidns="pid:[1]")
B = Claimant(run="run-b", host="ctl-2", pid=200, pidns="pid:[2]")


def lease_of(who: Claimant, *, expires_in: float = 300, since: datetime = NOW, at: datetime = NOW) -> dict:
    return Lease(holder=who.holder, run=who.run, host=who.host, pid=who.pid, pidns=who.pidns, since=since,
                 expires=at + timedelta(seconds=expires_in)).field()


# --- whose node is it -----------------------------------------------------------------------
def test_no_lease_or_an_expired_one_is_free():
    assert decide(None, A.holder, NOW) == "free"
    assert decide({}, A.holder, NOW) == "free"
    assert decide(lease_of(B, expires_in=-1), A.holder, NOW) == "free"
    assert decide(lease_of(B, expires_in=0), A.holder, NOW) == "free"


def test_my_live_lease_is_mine_and_another_runs_is_held():
    assert decide(lease_of(A), A.holder, NOW) == "mine"
    assert decide(lease_of(B), A.holder, NOW) == "held"
    assert decide(lease_of(A, expires_in=-5), A.holder, NOW) == "free"   # mine but lapsed: claim anew


def test_a_malformed_lease_names_no_live_holder():
    assert decide({"holder": "x", "since": "yesterday", "expires": "soon"}, A.holder, NOW) == "free"
    assert decide("run-b", A.holder, NOW) == "free"


def test_a_lease_written_without_a_zone_is_utc():
    hand = {"holder": B.holder, "run": B.run, "host": B.host, "since": "2026-12-01T11:00:00",
            "expires": "2026-12-01T12:05:00"}
    assert decide(hand, A.holder, NOW) == "held"


def test_a_dead_holder_on_this_host_frees_the_node_at_once_elsewhere_only_by_time():
    here = Claimant(run="run-c", host=A.host, pid=300, pidns=A.pidns)
    dead = leases.dead_here(here, alive=lambda pid: pid != A.pid)
    assert decide(lease_of(A), here.holder, NOW, dead) == "free"
    # the same PID in another PID namespace (a container with the same host name) says nothing
    other_ns = Claimant(run="run-c", host=A.host, pid=300, pidns="pid:[9]")
    assert decide(lease_of(A), other_ns.holder, NOW, leases.dead_here(other_ns, alive=lambda pid: False)) == "held"
    assert decide(lease_of(B), here.holder, NOW, dead) == "held"                       # another host
    assert decide(lease_of(A), here.holder, NOW, leases.dead_here(here, alive=lambda pid: True)) == "held"


def test_claim_renew_release_changes():
    new, held = leases.claim_change("n1", None, A, NOW, ttl=60)
    assert held is None and Lease.parse(new).holder == A.holder
    assert Lease.parse(new).expires == NOW + timedelta(seconds=60)
    keep, held = leases.claim_change("n1", lease_of(B), A, NOW)
    assert keep is leases.KEEP and held.run == "run-b" and held.host == "ctl-2"
    assert "held by run run-b on ctl-2" in held.message() and "until 2026-12-01T12:05:00" in held.message()
    # renewing keeps since and moves expires
    since = NOW - timedelta(minutes=10)
    renewed, lost = leases.renew_change("n1", lease_of(A, since=since), A.holder, NOW, ttl=300)
    assert lost is None and Lease.parse(renewed).since == since
    assert leases.renew_change("n1", lease_of(B), A.holder, NOW)[1] == "the lease of n1 was taken by run run-b on ctl-2"
    assert leases.renew_change("n1", None, A.holder, NOW)[1] == "the lease of n1 was cleared"
    assert leases.release_change(lease_of(A), A.holder) == (None, None)
    assert leases.release_change(lease_of(B), A.holder)[0] is leases.KEEP


def test_fence():
    assert fence("n1", lease_of(A), A.holder, NOW) == ""
    assert "taken by run run-b" in fence("n1", lease_of(B), A.holder, NOW)
    assert "cleared" in fence("n1", None, A.holder, NOW)
    assert "runs out" in fence("n1", lease_of(A, expires_in=10), A.holder, NOW)   # within the margin
    # a use without leases records unless another live run holds the node
    assert fence("n1", None, None, NOW) == ""
    assert fence("n1", lease_of(B, expires_in=-1), None, NOW) == ""
    assert "held by run run-b" in fence("n1", lease_of(B), None, NOW)


# --- compare-and-swap ------------------------------------------------------------------------
def test_claim_retries_after_losing_a_race_to_an_unrelated_write():
    rec = MemoryRecords("n1")
    rivals = []

    def rival(name):  # another run writes the node between our read and our write, once
        if not rivals:
            rivals.append(name)
            rec.write(rec.node(name), fields={"bringup_reason": "someone else's write"})
    rec.between = rival
    assert rec.claim(rec.node("n1"), A, 300) is None
    assert rec.conflicts == 1
    assert Lease.parse(rec.lease(rec.node("n1"))).holder == A.holder


def test_two_claimants_racing_one_wins_and_the_other_is_told_who():
    rec = MemoryRecords("n1")

    def rival(name):  # B takes the node between A's read and A's write
        rec.between = None
        assert rec.claim(rec.node(name), B, 300) is None
    rec.between = rival
    held = rec.claim(rec.node("n1"), A, 300)
    assert isinstance(held, LeaseHeld) and held.holder == B.holder
    assert rec.conflicts == 1
    assert Lease.parse(rec.lease(rec.node("n1"))).holder == B.holder


def test_losing_every_race_raises_instead_of_writing_blindly():
    rec = MemoryRecords("n1")
    rec.between = lambda name: rec.write(rec.node(name), fields={"x": time.monotonic()})
    with pytest.raises(PreconditionFailed):
        rec.claim(rec.node("n1"), A, 300)
    assert rec.conflicts == leases.CAS_ATTEMPTS and rec.lease(rec.node("n1")) is None


# --- the NetBox adapter: ETag and If-Match ------------------------------------------------------
class FakeDeviceAPI:
    """One NetBox device behind a stand-in HTTP session: ETag from a version counter,
    PATCH honouring If-Match with 412, custom fields merged as NetBox does."""

    def __init__(self, etag: bool = True) -> None:
        self.version, self.fields, self.sent, self.etag = 1, {"bringup_stage": {"value": "planned"}}, [], etag
        self.between = None   # called before a PATCH is answered: a rival write
        self.base_url, self.token = "http://nb.test/api", "nbt_abc.secret"
        self.http_session = self
        self.params: list = []

    def request(self, method, url, json=None, headers=None, params=None):
        self.sent.append((method, url, dict(headers or {}), json))
        self.params.append(params)
        # NetBox's ?fields= limits what it serializes *and* what a write accepts
        wanted = set((params or {}).get("fields", "").split(",")) - {""}
        tag = {"ETag": f'W/"v{self.version}"'} if self.etag else {}
        if method == "PATCH":
            if self.between:
                self.between()
            if headers.get("If-Match") != f'W/"v{self.version}"':
                return SimpleNamespace(ok=False, status_code=412, text='{"detail": "Precondition failed."}',
                                       headers=tag)
            if not wanted or "custom_fields" in wanted:
                self.fields.update(json["custom_fields"])
            self.version += 1
            tag = {"ETag": f'W/"v{self.version}"'}
        doc = {"id": 7, "status": {"value": "planned"}, "tags": [{"slug": "pool-a"}], "custom_fields": dict(self.fields)}
        doc = {k: v for k, v in doc.items() if not wanted or k in wanted}
        return SimpleNamespace(ok=True, status_code=200, headers=tag, text="", json=lambda: doc)


def test_adapter_reads_the_etag_and_writes_with_if_match():
    api = FakeDeviceAPI()
    nb = NetBox(api)
    etag, fields = nb.device_fields(7)
    assert etag == 'W/"v1"' and fields["bringup_stage"] == "planned"
    assert nb.set_fields_if_match(7, {"bringup_lease": {"holder": "h"}}, etag) == 'W/"v2"'
    method, url, headers, body = api.sent[-1]
    assert (method, url) == ("PATCH", "http://nb.test/api/dcim/devices/7/")
    assert headers["If-Match"] == 'W/"v1"' and headers["Authorization"] == "Bearer nbt_abc.secret"
    assert body == {"custom_fields": {"bringup_lease": {"holder": "h"}}}
    assert api.fields["bringup_lease"] == {"holder": "h"}   # the field list let the write through
    # both answers are the small ones: the read names what it needs, the write what it sent
    assert api.params[0] == {"fields": "id,status,tags,custom_fields"}
    assert api.params[-1] == {"fields": "id,custom_fields"}
    with pytest.raises(NetBoxPreconditionFailed) as err:   # stale version: 412
        nb.set_fields_if_match(7, {"bringup_lease": None}, etag)
    assert not err.value.transient   # a lost race is decided again, never retried blindly


def test_adapter_refuses_to_work_without_an_etag():
    with pytest.raises(NetBoxRequestError, match="ETag"):
        NetBox(FakeDeviceAPI(etag=False)).device_fields(7)


def test_netbox_records_claim_rereads_after_a_412_and_sees_the_rival():
    api = FakeDeviceAPI()
    records = NetBoxRecords(SimpleNamespace(netbox=NetBox(api)), outage_s=0)
    node = SimpleNamespace(id=7, name="n1", custom_fields={})

    def rival():  # B's claim lands between A's read and A's write
        api.between = None
        api.fields["bringup_lease"] = lease_of(B, expires_in=3600, at=leases.utcnow())
        api.version += 1
    api.between = rival
    held = records.claim(node, A, 300)
    assert isinstance(held, LeaseHeld) and held.run == "run-b"
    assert [m for m, *_ in api.sent] == ["GET", "PATCH", "GET"]
    # once B is gone (its lease lapsed), A takes the node, and gives it back
    api.fields["bringup_lease"] = lease_of(B, expires_in=-1, at=leases.utcnow())
    assert records.claim(node, A, 300) is None
    assert records.lease(node)["holder"] == A.holder
    sent = len(api.sent)
    assert records.renew(node, A.holder, 300) is None
    records.release(node, A.holder)
    # each on the version its predecessor's answer gave: one PATCH each, no read first
    assert [m for m, *_ in api.sent[sent:]] == ["PATCH", "PATCH"]
    assert records.lease(node) is None


def test_a_stale_known_version_is_refused_and_read_again():
    """The version kept with the record is only a first try: someone wrote since, NetBox
    refuses it (412), and the lease is read again with its version."""
    api = FakeDeviceAPI()
    records = NetBoxRecords(SimpleNamespace(netbox=NetBox(api)), outage_s=0)
    node = SimpleNamespace(id=7, name="n1", custom_fields={}, version='W/"v-old"')
    api.fields["bringup_lease"] = lease_of(B, expires_in=3600, at=leases.utcnow())
    held = records.claim(node, A, 300)
    assert isinstance(held, LeaseHeld) and held.run == "run-b"   # decided on what NetBox holds
    assert [m for m, *_ in api.sent] == ["PATCH", "GET"]


# --- the lifecycle's fence -------------------------------------------------------------------------
def ok(step):
    return lambda node, params: StepResult(node=node.name, step=step, ok=True)


def ok_steps(**override):
    return {**{name: ok(name) for name in STEP_NAMES}, **override}


def test_a_run_whose_lease_was_taken_over_mid_step_records_nothing():
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = "provisioned"

    def burn_in(node, params):  # A's burn-in outlives its lease; B takes the node over
        rec.nodes["n1"].custom_fields[leases.FIELD] = lease_of(B, expires_in=3600, at=leases.utcnow())
        return StepResult(node=node.name, step="burn_in", ok=True,
                          evidence=[Evidence(kind="burnin", document={"by": "run-a"})])
    lc = Lifecycle(steps=ok_steps(burn_in=burn_in), records=rec)
    assert lc.acquire("n1", A) is None
    writes = len(rec.writes)
    with pytest.raises(LeaseLost, match="taken by run run-b") as err:
        lc.run_step("n1", State.PROVISIONED, "burn_in", holder=A.holder)
    assert err.value.controller_fault and not err.value.transient
    assert rec.evidence == {} and len(rec.writes) == writes     # no burn-in document, no stage
    assert rec.nodes["n1"].stage == "provisioned"


def test_a_step_does_not_start_on_a_node_another_run_holds():
    rec = MemoryRecords("n1")
    called = []
    lc = Lifecycle(steps=ok_steps(discover=lambda node, params: called.append(1)), records=rec)
    assert lc.acquire("n1", B) is None
    theirs = Lease.parse(rec.lease(rec.node("n1")))
    assert lc.acquire("n1", A) == LeaseHeld("n1", B.holder, B.run, B.host, theirs.since, theirs.expires)
    for holder in (A.holder, None):   # a run with leases, and a one-off command without
        with pytest.raises(LeaseLost, match="held by run run-b|taken by run run-b"):
            lc.run_step("n1", State.PLANNED, "discover", holder=holder)
    assert called == []


def test_the_holder_walks_and_gives_the_node_back():
    rec = MemoryRecords("n1")
    lc = Lifecycle(steps=ok_steps(), records=rec)
    assert lc.acquire("n1", A) is None
    assert lc.run_step("n1", State.PLANNED, "discover", holder=A.holder).state == "discovered"
    assert lc.renew("n1", A.holder) is None
    lc.release("n1", A.holder)
    assert rec.lease(rec.node("n1")) is None
    assert lc.acquire("n1", B) is None     # free again for the next run


def test_renewer_renews_until_stopped_then_releases():
    calls, released = [], threading.Event()
    with Renewer(lambda: calls.append(1), released.set, every=0.01, logger=logging.getLogger("t")) as r:
        deadline = time.monotonic() + 5
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(calls) >= 3 and released.is_set() and r.lost is None


def test_renewer_stops_renewing_a_lost_lease():
    calls = []

    def renew():
        calls.append(1)
        return "the lease of n1 was taken by run run-b on ctl-2"
    with Renewer(renew, lambda: None, every=0.01) as r:
        deadline = time.monotonic() + 5
        while r.lost is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
    assert r.lost and len(calls) == 1


def test_schema_declares_the_lease_field():
    from bringup.netbox.schema import load_schema
    cf = {c["name"]: c for c in load_schema().custom_fields}
    assert cf[leases.FIELD]["type"] == "json" and cf[leases.FIELD]["type"] == cf["bringup_evidence"]["type"]


def test_a_lease_whose_run_is_over_is_free_and_one_whose_run_is_unknown_is_not():
    """Seen in the fault suite: a run that ended while NetBox was down could not give its
    lease back, and the rerun right after skipped the node for the lease's whole TTL."""
    now = leases.utcnow()
    current = lease_of(B, expires_in=3600, at=now)
    over = leases.holder_gone(A, ended=lambda run: run == B.run)
    assert leases.decide(current, A.holder, now, over) == "free"
    running = leases.holder_gone(A, ended=lambda run: False)
    assert leases.decide(current, A.holder, now, running) == "held"

    def cannot_tell(run):
        raise RuntimeError("orchestrator away")
    assert leases.decide(current, A.holder, now, leases.holder_gone(A, ended=cannot_tell)) == "held"
