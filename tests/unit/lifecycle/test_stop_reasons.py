"""A stopped node always says why (issue #24, item 2).

Every way a walk can stop (the lease, NetBox answering slowly or refusing, our settings and
credentials, a step's own failure, a bug of ours, a stage moved by hand, NetBox away when
the result is recorded) is walked here through the real walk (``flows.walk.walk_node``) over
the real engine on in-memory records. Each must leave the reason in NetBox
(``bringup_reason`` and the journal; only a journal line when another run took the node
over, since the node is that run's to write) and in the run's report, so no summary line
ends with an empty reason ("PENDING gpu-r01-n06: stage discovered; " in the issue's run).
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from lifecycle_fakes import MemoryRecords

from bringup import errors
from bringup.insight.run_summary import fleet_rows, summary_text
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle
from bringup.lifecycle.results import StepResult
from bringup.netbox import lease as leases
from bringup.netbox.lease import Claimant
from bringup.netbox.spool import Spool
from flows import runtime, walk

A = Claimant(run="run-a", host="ctl-1", pid=100, pidns="pid:[1]")
B = Claimant(run="run-b", host="ctl-2", pid=200, pidns="pid:[2]")


class Rt:
    def __init__(self, lc: Lifecycle) -> None:
        self.lc = lc

    def lifecycle(self) -> Lifecycle:
        return self.lc


class Clock:
    def __init__(self) -> None:
        self.now = leases.utcnow()

    def __call__(self):
        return self.now


def run_out(fx):        # the step outlived the lease; no renewal landed meanwhile
    fx.clock.now += timedelta(seconds=leases.TTL_S + 1)


def taken(fx):          # the lease ran out and another run took the node over
    fx.rec.nodes["n1"].custom_fields[leases.FIELD] = leases.claim_change("n1", None, B, fx.clock())[0]


def cleared(fx):        # an operator cleared the lease by hand
    fx.rec.nodes["n1"].custom_fields[leases.FIELD] = None


def renewer_died(fx):   # the renewer's thread ended (as Renewer tells its on_stop)
    fx.lc.renewer("n1", A.holder).on_stop("the lease renewer of n1 failed: MemoryError: ")


def moved(fx):          # someone moved the node back by hand while the run walked it
    fx.rec.nodes["n1"].stage = "planned"


def raises(exc):
    def hook(fx):
        raise exc
    return hook


def refused(fx):        # the step's own negative result, with no reason given
    return StepResult(node="n1", step="install", ok=False)


def netbox_gone(fx):    # NetBox goes away once the step has done its work: nothing more lands
    def down(*args, **kw):
        raise errors.NetBoxUnavailable("cannot reach NetBox: ConnectionError")
    fx.rec.write = down
    fx.rec.journal = down


def refuses_writes(fx):  # NetBox refuses the engine's own record of the step, once
    real = fx.rec.write

    def write(node, **kw):
        fx.rec.write = real
        raise errors.NetBoxRequestError("NetBox rejected the request (400): bringup_evidence: invalid JSON")
    fx.rec.write = write


# (what stops the walk, what its reason names, where NetBox says it)
WAYS = {
    "lease ran out": (run_out, "runs out", "reason"),
    "lease taken over": (taken, "taken by run run-b", "journal"),
    "lease cleared": (cleared, "was cleared", "reason"),
    "renewer stopped": (renewer_died, "no longer renewed", "reason"),
    "NetBox slow (transient)": (raises(errors.NetBoxUnavailable("NetBox did not answer in time")),
                                "NetBox did not answer in time", "reason"),
    "NetBox refused (permanent)": (raises(errors.NetBoxRequestError("NetBox rejected the request (400): x")),
                                   "rejected the request", "reason"),
    "NetBox token refused": (raises(errors.NetBoxAuthError("NetBox refused the API token (403)")),
                             "refused the API token", "reason"),
    "our settings": (raises(errors.ConfigError("settings have no bmc_credentials_file")),
                     "no bmc_credentials_file", "reason"),
    "our Kubernetes API": (raises(errors.KubeTransientError("the Kubernetes API answered 503")),
                           "answered 503", "reason"),
    "BMC unreachable after retries": (raises(errors.RedfishTimeoutError("BMC 10.0.0.9 did not answer")),
                                      "BMC unreachable after retries", "reason"),
    "the step's own failure": (raises(errors.ParseError("no MAC in the inventory", path="$.Members[0]")),
                               "no MAC in the inventory", "reason"),
    "the step's own negative result": (refused, "install failed", "reason"),
    "a bug of ours": (raises(KeyError("Members")), "KeyError", "reason"),
    "stage moved by hand": (moved, "another run moved it", "reason"),
    "NetBox refused the record": (refuses_writes, "invalid JSON", "reason"),
    "NetBox away at the record": (netbox_gone, "NetBox is unreachable", None),
}


@pytest.fixture
def fx(monkeypatch, tmp_path):
    rec = MemoryRecords("n1")
    hooks: dict[str, object] = {}
    ns = type("Fx", (), {})()

    def step(name):
        def fn(node, params):
            result = hooks[name](ns) if name in hooks else None
            return result or StepResult(node=node.name, step=name, ok=True)
        return fn
    lc = Lifecycle(steps={n: step(n) for n in STEP_NAMES}, records=rec, spool=Spool(tmp_path / "spool"))
    clock = Clock()
    monkeypatch.setattr(leases, "utcnow", clock)
    runtime.use(Rt(lc))
    monkeypatch.setattr(walk, "get_run_logger", lambda: logging.getLogger("walk-test"))
    monkeypatch.setattr(walk, "publish_node", lambda report, results, prefix="": None)
    monkeypatch.setattr(walk, "claimant", lambda: A)
    monkeypatch.setattr(walk, "run_step", lambda node, rack, state, st, params, config=None, order=0, holder=None:
                        lc.run_step(node, state, st, params, holder=holder))
    ns.rec, ns.lc, ns.hooks, ns.clock = rec, lc, hooks, clock
    yield ns
    runtime.use(None)


@pytest.mark.parametrize("way", list(WAYS))
def test_every_way_a_walk_stops_says_why_in_netbox_and_in_the_summary(fx, way):
    hook, names, where = WAYS[way]
    fx.hooks["install"] = hook
    w = walk.walk_node.fn("n1", "r1", {})
    report = w.report
    assert report.verdict != "admitted", report
    assert report.reasons and all(r.strip() for r in report.reasons), report
    assert any(names in r for r in report.reasons), (names, report.reasons)
    said = "; ".join(report.reasons)
    assert not any(said.count(r) > 1 for r in report.reasons if len(r) > 20), said   # said once
    line = summary_text([report]).splitlines()[-1]
    assert not line.rstrip().endswith(";") and names in line, line
    assert fleet_rows([report])[0]["reasons"] not in ("", "-")
    node = fx.rec.nodes["n1"]
    reason = str(node.custom_fields.get("bringup_reason") or "")
    journal = "\n".join(text for _, text in node.journal)
    if where == "reason":
        assert names in reason, reason
        assert names in journal, journal
    elif where == "journal":   # another run's node now: its reason is that run's to write
        assert "held in" not in reason and names in journal, (reason, journal)
    if way == "lease taken over":
        assert fx.rec.lease(fx.rec.node("n1"))["holder"] == B.holder    # left to its holder
    elif where is not None:
        assert not fx.rec.lease(fx.rec.node("n1"))                       # given back


def test_a_walk_that_is_not_stopped_reports_no_stale_reason(fx):
    fx.hooks["install"] = raises(errors.NetBoxUnavailable("NetBox did not answer in time"))
    assert walk.walk_node.fn("n1", "r1", {}).report.verdict == "held"
    del fx.hooks["install"]
    again = walk.walk_node.fn("n1", "r1", {})
    assert again.report.verdict == "admitted" and again.report.reasons == []
