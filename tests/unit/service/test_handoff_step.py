"""One pass of the NVSentinel hand-off with the lifecycle, NetBox and the cluster faked
(bringup.service.handoff_step)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from bringup.kube.remediation import Request
from bringup.lifecycle.engine import State
from bringup.service import handoff_step as step

T0 = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
REQ = Request(name="gpu0-xid79-n1", node="n1", message="GPU fell off the bus (XID 79)",
              error_codes=("XID-79",), component="gpu", fatal=True, gpus=(0,), released="True", complete="Unknown")


class Lc:
    def __init__(self, answer=State.DRAINING):
        self.calls, self.answer = [], answer

    def suspect(self, name, reasons, evidence=(), *, by="health watch"):
        self.calls.append(("suspect", name, tuple(reasons), by))
        return self.answer

    def start(self, name, *, force=False):
        self.calls.append(("start", name, force))
        return State.PLANNED

    def inspect(self, name, reasons, *, by):
        self.calls.append(("inspect", name, tuple(reasons), by))
        return State.INSPECTION


@pytest.fixture
def site(monkeypatch):
    s = SimpleNamespace(journal=[], accepted=[], answered=[], stage="active", changes=[], nodes=["n1"])
    rec = SimpleNamespace(id=1, name="n1", stage="active")

    def nodes(names):
        return [SimpleNamespace(**{**vars(rec), "stage": s.stage})] if names[0] in s.nodes else []
    nb = SimpleNamespace(nodes=nodes, journal=lambda node_id, text, kind="info": s.journal.append((kind, text)),
                         stage_changes=lambda ids: {1: s.changes})
    s.ctx = SimpleNamespace(netbox=nb, kube=object())
    monkeypatch.setattr(step, "accept", lambda kube, req: s.accepted.append(req.name) or T0)
    monkeypatch.setattr(step, "complete", lambda kube, req, status, reason, message:
                        s.answered.append((req.name, status, reason)))
    return s


def test_an_open_request_is_taken_through_a_re_burn_in_in_nvsentinels_words(site):
    lc = Lc()
    row = step.take(site.ctx, lc, REQ)
    assert row["action"] == "reburnin" and row["outcome"] == "accepted: draining"
    ((what, node, reasons, by),) = lc.calls
    assert (what, node, by) == ("suspect", "n1", "NVSentinel hand-off")
    assert reasons == ("NVSentinel handed the node over (gpu0-xid79-n1: XID-79): GPU fell off the bus (XID 79)",)
    assert site.accepted == ["gpu0-xid79-n1"]
    assert site.journal[0][1].startswith("## NVSentinel hand-off: gpu0-xid79-n1 accepted")


def test_a_driver_fault_is_reinstalled(site):
    lc = Lc()
    driver = Request(**{**vars(REQ), "component": "driver", "error_codes": ("DRIVER-MISMATCH",)})
    assert step.take(site.ctx, lc, driver)["action"] == "reinstall" and lc.calls == [("start", "n1", True)]


def test_a_node_another_run_has_is_not_accepted(site):
    row = step.take(site.ctx, Lc(answer=State.BURNED_IN), REQ)
    assert row["outcome"].startswith("not taken: the node is burned_in") and site.accepted == []


def test_a_node_netbox_does_not_know_is_left_alone(site):
    site.nodes = []
    row = step.take(site.ctx, Lc(), REQ)
    assert "not a node NetBox knows" in row["outcome"] and not site.accepted and not site.journal


def test_an_accepted_request_is_answered_once_the_node_serves_again(site):
    accepted = Request(**{**vars(REQ), "accepted_at": T0})
    site.changes = [((T0 + timedelta(minutes=1)).isoformat(), "draining")]
    site.stage = "provisioned"
    assert step.take(site.ctx, Lc(), accepted)["outcome"] == "in progress: provisioned" and not site.answered
    site.changes.append(((T0 + timedelta(minutes=30)).isoformat(), "active"))
    site.stage = "active"
    row = step.take(site.ctx, Lc(), accepted)
    assert row["outcome"] == "ExternalRemediationComplete=True (RemediatedByBringup)"
    assert site.answered == [("gpu0-xid79-n1", "True", "RemediatedByBringup")]
    assert site.journal[-1][0] == "success" and "answered True" in site.journal[-1][1]


def test_a_node_bringup_quarantined_is_answered_false(site):
    accepted = Request(**{**vars(REQ), "accepted_at": T0})
    site.changes = [((T0 + timedelta(minutes=1)).isoformat(), "draining"),
                    ((T0 + timedelta(minutes=20)).isoformat(), "quarantined")]
    site.stage = "quarantined"
    row = step.take(site.ctx, Lc(), accepted)
    assert row["outcome"] == "ExternalRemediationComplete=False (QuarantinedByBringup)"
    assert site.journal[-1][0] == "danger"


def test_a_part_to_replace_goes_to_inspection_and_the_request_stays_open_meanwhile(site):
    lc = Lc()
    psu = Request(**{**vars(REQ), "component": "NODE", "error_codes": ("bmc_psu_lost",), "gpus": (),
                     "raised_by": "bringup-n1-abc-20261206100000"})
    row = step.take(site.ctx, lc, psu)
    assert (row["action"], row["outcome"]) == ("inspection", "accepted: inspection")
    assert lc.calls[0][0] == "inspect" and lc.calls[0][3] == "NVSentinel hand-off"
    assert "the fault bringup reported: ExternalFault bringup-n1-abc-20261206100000" in site.journal[0][1]
    site.changes, site.stage = [((T0 + timedelta(minutes=1)).isoformat(), "inspection")], "inspection"
    row = step.take(site.ctx, lc, Request(**{**vars(psu), "accepted_at": T0}))
    assert row["outcome"] == "in progress: inspection (answered once repaired and re-tested)" and not site.answered


class Faults:
    def __init__(self, held=None):
        self.held, self.created = held, []


@pytest.fixture
def faults(site, monkeypatch):
    f = Faults()
    monkeypatch.setattr(step, "open_fault", lambda kube, node: f.held)
    monkeypatch.setattr(step, "create", lambda kube, body: f.created.append(body) or body["metadata"]["name"])
    return f


def test_a_finding_is_reported_as_an_externalfault_and_journaled(site, faults):
    from bringup.service.health import Signal
    xid = Signal("xid_fatal", "critical", "GPU 3: XID 79 since the last look", {"gpu": 3, "xid": 79})
    rec = site.ctx.netbox.nodes(["n1"])[0]
    done = step.report_fault(site.ctx, rec, [xid], now=T0)
    (body,) = faults.created
    assert done == f"reported to NVSentinel: ExternalFault {body['metadata']['name']}"
    assert body["spec"]["healthEvent"]["errorCode"] == ["XID-79"] and body["spec"]["healthEvent"]["nodeName"] == "n1"
    kind, text = site.journal[-1]
    assert kind == "warning" and text.startswith(f"## Reported to NVSentinel: ExternalFault {body['metadata']['name']}")
    assert "errorCode: XID-79" in text and xid.message in text


def test_a_node_with_an_open_externalfault_is_not_reported_again(site, faults):
    from bringup.kube.external_fault import Fault
    from bringup.service.health import Signal
    faults.held = Fault(name="ops-drain-n1", node="n1", reported="True", cleared="False")
    rec = site.ctx.netbox.nodes(["n1"])[0]
    done = step.report_fault(site.ctx, rec, [Signal("bmc_leak", "critical", "BMC: leak", {})])
    assert done == "reported to NVSentinel already: ExternalFault ops-drain-n1 is open"
    assert faults.created == [] and site.journal == []
