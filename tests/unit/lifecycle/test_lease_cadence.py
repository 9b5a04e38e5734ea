"""A site's lease renewal cadence (``lease_renew_every_s``, issue #25): the engine claims and
renews to the lifetime that cadence needs (the same margins as the default's), and the
setting refuses a cadence it cannot keep those margins with."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from lifecycle_fakes import MemoryRecords

from bringup.errors import ConfigError
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle
from bringup.netbox import lease as leases
from bringup.netbox.http_retry import WORST_CASE_S
from bringup.netbox.lease import Claimant, Lease
from bringup.settings import Settings

STEPS = {name: (lambda node, params: None) for name in STEP_NAMES}
NOW = datetime(2026, 12, 7, 5, 0, tzinfo=UTC)
A = Claimant(run="run-a", host="ctl-1", pid=100, pidns="pid:[1]")


@pytest.fixture(autouse=True)
def frozen(monkeypatch):
    monkeypatch.setattr(leases, "utcnow", lambda: NOW)


def expiry(rec: MemoryRecords) -> float:
    """Seconds the lease NetBox holds has to go (kept to the second)."""
    return (Lease.parse(rec.lease(rec.node("n1"))).expires - NOW).total_seconds()


def test_the_default_cadence_claims_for_the_default_lifetime():
    assert leases.ttl_for(leases.RENEW_EVERY_S) == leases.TTL_S
    rec = MemoryRecords("n1")
    lc = Lifecycle(steps=STEPS, records=rec)
    assert lc.acquire("n1", A) is None
    assert int(leases.TTL_S) <= expiry(rec) <= leases.TTL_S


def test_a_slower_cadence_claims_and_renews_for_longer_with_the_same_margins():
    rec = MemoryRecords("n1")
    lc = Lifecycle(steps=STEPS, records=rec, renew_every=300.0)
    assert lc.acquire("n1", A) is None
    ttl = leases.ttl_for(300.0)
    assert int(ttl) <= expiry(rec) <= ttl
    # what a renewal at its worst leaves is the same as at the default cadence
    assert ttl - 300.0 - leases.RENEW_WORST_S - WORST_CASE_S == leases.FENCE_MARGIN_S
    assert lc.renew("n1", A.holder) is None and int(ttl) <= expiry(rec) <= ttl
    renewer = lc.renewer("n1", A.holder)
    assert renewer.every == 300.0


def test_the_setting_refuses_a_cadence_outside_its_bounds(tmp_path):
    base = {"site": "s", "netbox_url": "http://nb", "netbox_token_file": str(tmp_path / "t")}
    assert Settings(**base).lease_renew_every_s == leases.RENEW_EVERY_S
    assert Settings(**base, lease_renew_every_s=300).lease_renew_every_s == 300
    for bad in (1, 7200):
        with pytest.raises((ValueError, ConfigError)):
            Settings(**base, lease_renew_every_s=bad)


def test_every_engine_takes_the_cadence_and_spool_from_the_sites_settings(tmp_path):
    """bringup.pipeline.engine builds the real engine and the scale bench's alike: a setting
    passed to one and not the other (the bench's --renew-every once measured nothing) cannot be."""
    from types import SimpleNamespace

    from bringup.pipeline import engine
    settings = SimpleNamespace(lease_renew_every_s=300.0, spool_path=lambda: tmp_path / "spool",
                               netbox_outage_s=1.0)
    lc = engine(SimpleNamespace(settings=settings), STEPS)
    assert lc.renew_every == 300.0 and lc.spool.root == tmp_path / "spool"
    assert lc.steps is STEPS and lc.records.ctx.settings is settings
