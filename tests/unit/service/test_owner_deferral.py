"""With NVSentinel as the site's health owner (issue #27, item 1), a look's critical finding
is recorded in NetBox and said to be left to the owner: the look is marked deferred, so the
health watch takes nothing out of service. With bringup as owner nothing changes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import bringup.netbox.gpu_records
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
    # NetBox has no GPU of the node out of service yet
    monkeypatch.setattr(bringup.netbox.gpu_records, "failed_gpus", lambda nb, ids: {})

    def run(owner: str, doc: dict = DOC, allocatable: str = "8"):
        monkeypatch.setattr(bringup.provision.ansible_steps, "run_burnin",
                            lambda *a, **k: SimpleNamespace(document=doc, rc=1))
        ctx = SimpleNamespace(settings=SimpleNamespace(health_owner=owner, gpu_isolation="device-plugin"),
                              netbox=SimpleNamespace(journal_entries=lambda node_id: []),
                              evidence=SimpleNamespace(has=lambda fields, kind: False),
                              host=lambda rec: {rec.name: {}}, ssh_access=lambda: None,
                              kube=SimpleNamespace(node_state=lambda name: SimpleNamespace(
                                  allocatable={"nvidia.com/gpu": allocatable})))
        rec = SimpleNamespace(id=1, name="n1", custom_fields={}, pool={"name": "p1"},
                              sku=SimpleNamespace(gpu=SimpleNamespace(count=8)))
        return watch_step.look(ctx, rec, load_policy(), [48, 79])
    return run


def test_nvsentinel_as_owner_records_the_finding_and_leaves_the_node_to_it(look):
    result = look("nvsentinel")
    assert result.critical and result.deferred_to == "nvsentinel"
    ((kind, text),) = Records.journaled
    assert kind == "warning" and "health owner is nvsentinel" in text and "XID 79" in text


def test_bringup_as_owner_acts_as_before(look):
    result = look("bringup")
    assert result.critical and result.deferred_to == "" and Records.journaled == []


def test_one_gpus_xid_the_device_plugin_acted_on_takes_the_gpu_not_the_node(look):
    """Issue #27 item 3: XID 48 on GPU 5, and the device plugin advertises 7: the look takes
    GPU 5 out and nothing of the node (its shortfall is that GPU)."""
    doc = {"checks": [{"name": "xid", "status": "fail",
                       "data": {"events": [{"gpu": "5", "xid": 48, "line": "NVRM: Xid (PCI:0000:9a:00): 48"}]}},
                      {"name": "inventory", "status": "pass",
                       "data": {"gpus": [{"index": 5, "serial": "1652823054567"}, {"index": 6, "serial": None}]}}]}
    result = look("bringup", doc, allocatable="7")
    assert result.critical == [] and [g.gpu for g in result.gpus] == [5]
    assert result.gpu_serials == {5: "1652823054567"}
    assert result.evidence().document["gpus_out"][0]["gpu"] == 5


def test_the_same_xid_with_the_gpu_still_allocatable_takes_the_node(look):
    doc = {"checks": [{"name": "xid", "status": "fail",
                       "data": {"events": [{"gpu": "5", "xid": 48, "line": "NVRM: Xid (PCI:0000:9a:00): 48"}]}}]}
    result = look("bringup", doc, allocatable="8")
    assert [s.code for s in result.critical] == ["xid_fatal"] and result.gpus == []
    assert any("still advertises 8 GPUs" in r for r in result.node_reasons)


def test_a_shared_pools_node_is_watched_on_its_pools_resources_not_whole_gpus():
    """A MIG pool's node advertises nvidia.com/gpu 0 and its MIG devices: the watch compares
    what the pool's mode hands out (as the gate does), so a healthy MIG node raises nothing
    and a MIG resource short is named."""
    from bringup.service.health import assess
    from bringup.sku import load_skus
    rec = SimpleNamespace(name="m1", pool={"name": "mig-h200", "sharing": "mig",
                                           "mig": {"geometry": "all-balanced", "strategy": "mixed"}},
                          sku=load_skus()["hgx-h200-141gb"])
    want = watch_step.shared_resources(rec)
    assert want == {"nvidia.com/mig-1g.18gb": 16, "nvidia.com/mig-2g.35gb": 8, "nvidia.com/mig-3g.71gb": 8}
    snap = watch_step.snapshot({"checks": []})
    healthy = {"nvidia.com/gpu": "0", **{k: str(v) for k, v in want.items()}}
    assert not [s for s in assess(load_policy(), None, snap, allocatable=healthy, expected_gpus=8,
                                  expected_resources=want) if s.code == "gpus_unallocatable"]
    short = {**healthy, "nvidia.com/mig-1g.18gb": "14"}
    (sig,) = [s for s in assess(load_policy(), None, snap, allocatable=short, expected_gpus=8, expected_resources=want)
              if s.code == "gpus_unallocatable"]
    assert sig.evidence["resource"] == "nvidia.com/mig-1g.18gb" and sig.evidence["expected"] == 16
    assert watch_step.shared_resources(SimpleNamespace(name="e1", pool={"name": "p"}, sku=rec.sku)) is None
