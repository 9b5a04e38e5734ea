"""With NVSentinel as the site's health owner (issue #27, item 1), a look's critical finding
is recorded in NetBox and said to be left to the owner: the look is marked deferred, so the
health watch takes nothing out of service. With bringup as owner nothing changes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import bringup.netbox.records
import bringup.provision.ansible_steps
from bringup.service import watch_step
from bringup.service.health import load_policy

DOC = {"checks": [{"name": "xid", "status": "fail",
                   "data": {"events": [{"gpu": "3", "xid": 79, "line": "NVRM: Xid (PCI:0000:3a:00): 79"}]}}]}


class Records:
    journaled: list[tuple[str, str]] = []

    def __init__(self, ctx):
        pass

    def put_evidence(self, rec, evidence):
        return {"docs": {}}

    def write(self, rec, fields=None, **kw):
        pass

    def journal(self, rec, text, kind="info"):
        Records.journaled.append((kind, text))


@pytest.fixture
def look(monkeypatch):
    Records.journaled = []
    monkeypatch.setattr(bringup.provision.ansible_steps, "run_burnin",
                        lambda *a, **k: SimpleNamespace(document=DOC, rc=1))
    monkeypatch.setattr(bringup.netbox.records, "NetBoxRecords", Records)
    monkeypatch.setattr(watch_step, "_plan", lambda rec, policy: {})
    monkeypatch.setattr(watch_step, "conditions_of", lambda ctx, name: [])

    def run(owner: str):
        ctx = SimpleNamespace(settings=SimpleNamespace(health_owner=owner),
                              evidence=SimpleNamespace(has=lambda fields, kind: False),
                              host=lambda rec: {rec.name: {}}, ssh_access=lambda: None,
                              kube=SimpleNamespace(node_state=lambda name: SimpleNamespace(
                                  allocatable={"nvidia.com/gpu": "8"})))
        rec = SimpleNamespace(name="n1", custom_fields={}, sku=SimpleNamespace(gpu=SimpleNamespace(count=8)))
        return watch_step.look(ctx, rec, load_policy(), [79])
    return run


def test_nvsentinel_as_owner_records_the_finding_and_leaves_the_node_to_it(look):
    result = look("nvsentinel")
    assert result.critical and result.deferred_to == "nvsentinel"
    ((kind, text),) = Records.journaled
    assert kind == "warning" and "health owner is nvsentinel" in text and "XID 79" in text


def test_bringup_as_owner_acts_as_before(look):
    result = look("bringup")
    assert result.critical and result.deferred_to == "" and Records.journaled == []
