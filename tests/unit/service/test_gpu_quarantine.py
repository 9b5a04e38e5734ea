"""One GPU taken out of service with NetBox's and the cluster's seams faked
(bringup.service.gpu_quarantine)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

import bringup.kube.device_taints
import bringup.netbox.gpu_records
from bringup.service import gpu_quarantine as gq
from bringup.service.gpu_scope import GpuOut
from bringup.service.health import Signal

REC = SimpleNamespace(id=7, name="n7", sku=SimpleNamespace(gpu=SimpleNamespace(count=8)))


@pytest.fixture
def site(monkeypatch):
    calls = SimpleNamespace(marked=[], tainted=[], journal=[], failed={})
    monkeypatch.setattr(bringup.netbox.gpu_records, "mark_gpu_failed",
                        lambda nb, device_id, node, index, **kw: calls.marked.append((device_id, node, index, kw)))
    monkeypatch.setattr(bringup.netbox.gpu_records, "failed_gpus", lambda nb, ids: calls.failed)

    def taint(kube, t, **kw):
        calls.tainted.append(t)
        return f"bringup-gpu-{t.node}-{t.device}"
    monkeypatch.setattr(bringup.kube.device_taints, "taint_gpu", taint)

    def ctx(isolation):
        nb = SimpleNamespace(journal=lambda node_id, text, kind="info": calls.journal.append((kind, text)),
                             journal_entries=lambda node_id: [])
        return SimpleNamespace(settings=SimpleNamespace(gpu_isolation=isolation), netbox=nb, kube=object())
    calls.ctx = ctx
    return calls


def test_on_a_dra_site_the_gpu_gets_a_device_taint_with_its_classes_effect(site):
    done = gq.quarantine(site.ctx("dra"), REC, [GpuOut(5, "xid_fatal", "GPU 5: XID 48 since the last look", 48)],
                         serials={5: "1652823054567", 4: "other"})
    assert done == "GPU 5 quarantined; the node keeps serving on its other GPUs"
    (t,) = site.tainted
    # XID 48 is a hardware finding (guard.yaml), and hardware is NoExecute (healthwatch.yaml)
    assert (t.node, t.gpu, t.key, t.value, t.effect) == ("n7", 5, "gpu.nvidia.com/xid", "48", "NoExecute")
    assert site.marked == [(7, "n7", 5, {"reason": "GPU 5: XID 48 since the last look", "code": "xid_fatal",
                                         "serial": "1652823054567"})]
    ((kind, text),) = site.journal
    assert kind == "warning" and text.startswith("## GPU quarantined: 5") and "DeviceTaintRule bringup-gpu-n7-gpu-5" in text


def test_on_a_device_plugin_site_nothing_is_written_to_the_cluster(site):
    gq.quarantine(site.ctx("device-plugin"), REC, [GpuOut(2, "xid_fatal", "GPU 2: XID 48", 48)])
    assert site.tainted == [] and [m[2] for m in site.marked] == [2] and site.marked[0][3]["serial"] == ""
    assert "the device plugin marked it unhealthy" in site.journal[0][1]


def test_nothing_to_quarantine_writes_nothing(site):
    assert gq.quarantine(site.ctx("dra"), REC, []) == "" and not site.journal and not site.marked


def test_the_scope_counts_the_gpus_netbox_has_out_already(site):
    site.failed = {7: [SimpleNamespace(index=3)]}
    xid = Signal("xid_fatal", "critical", "GPU 1: XID 48", {"gpu": "1", "xid": 48})
    scope = gq.scope_of(site.ctx("dra"), REC, [xid], allocatable=None)
    assert scope.node_goes and scope.why_node.startswith("2 GPUs out of service")


def test_a_quiet_look_reads_nothing(site, monkeypatch):
    monkeypatch.setattr(bringup.netbox.gpu_records, "failed_gpus", lambda nb, ids: pytest.fail("read NetBox"))
    warn = Signal("xid_other", "warning", "GPU 1: XID 13", {"gpu": "1", "xid": 13})
    assert not gq.scope_of(site.ctx("dra"), REC, [warn], allocatable=8).node_goes


def test_quarantines_are_counted_from_the_journal_within_the_window():
    since = datetime(2026, 11, 6, tzinfo=UTC)
    entries = [{"comments": "## GPU quarantined: 3\n...", "created": "2026-11-20T10:00:00Z"},
               {"comments": "## GPU quarantined: 1\n...", "created": "2026-10-01T10:00:00+00:00"},
               {"comments": "## Health watch: taken out", "created": "2026-11-21T10:00:00Z"},
               {"comments": "## GPU quarantined: 4", "created": "not a time"}]
    assert gq.quarantines_since(entries, since) == 1


def test_at_the_gate_a_gpu_the_burn_in_passed_is_back_in_service(site, monkeypatch):
    released, lifted = [], []
    monkeypatch.setattr(bringup.netbox.gpu_records, "release_gpu",
                        lambda nb, device_id, index, **kw: released.append((device_id, index)) or True)
    monkeypatch.setattr(bringup.kube.device_taints, "untaint_gpu",
                        lambda kube, node, gpu: lifted.append((node, gpu)) or True)
    site.failed = {7: [SimpleNamespace(index=5)]}
    assert gq.release_passed(site.ctx("dra"), REC) == ()
    assert released == [(7, 5)] and lifted == [("n7", 5)]
    assert site.journal[-1][0] == "success" and site.journal[-1][1].startswith("## GPU back in service: 5")


def test_with_release_off_the_gate_expects_the_others(site, monkeypatch):
    monkeypatch.setattr(bringup.netbox.gpu_records, "release_gpu", lambda *a, **k: pytest.fail("released"))
    site.failed = {7: [SimpleNamespace(index=5), SimpleNamespace(index=2)]}
    keep = gq.load_policy().model_copy(update={"release_on_passing_burnin": False})
    assert gq.release_passed(site.ctx("device-plugin"), REC, keep) == (2, 5) and not site.journal
