"""One bad GPU on a DRA site (settings ``gpu_isolation: dra``), through
bringup.service.gpu_quarantine on real services: NetBox 4.7 (the seeded lab fleet) and the
lab's Kubernetes API with the DRA driver's ResourceSlice of the node published. A fatal XID
on GPU 5 is one GPU's: its device gets bringup's DeviceTaintRule (the driver's
``gpu.nvidia.com/xid`` key, the hardware class's NoExecute), NetBox records GPU 5 failed and
journals it; a second GPU would send the node; at the readiness gate, after the burn-in that
tested every GPU, GPU 5 is back in service and its taint lifted. (The health watch's way
there, on the lab's device-plugin nodes, is tests/integration/watch.)"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from kubernetes import client as k8s

from bringup.kube import device_taints as dt
from bringup.netbox.gpu_records import failed_gpus
from bringup.netbox.schema import load_schema
from bringup.netbox.schema_apply import apply_schema
from bringup.service.gpu_quarantine import quarantine, release_passed, scope_of
from bringup.service.health import Signal
from lab.seed import seed

pytestmark = pytest.mark.integration

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "kube"
GROUP = "resource.k8s.io"


def publish_slice(kube, node: str) -> None:
    """The DRA driver's ResourceSlice of ``node`` (pool = the node), eight GPUs gpu-0..7."""
    doc = yaml.safe_load((FIX / "resourceslice-gpu.yaml").read_text())
    gpu0 = doc["spec"]["devices"][0]
    doc["metadata"] = {"name": f"{node}-gpu.nvidia.com-x7k2p"}
    doc["spec"].update(nodeName=node, pool={"name": node, "generation": 1, "resourceSliceCount": 1},
                       devices=[{**copy.deepcopy(gpu0), "name": f"gpu-{i}"} for i in range(8)])
    k8s.CustomObjectsApi(kube.api_client).create_cluster_custom_object(GROUP, "v1", "resourceslices", doc)


def xid(gpu: int, code: int = 48) -> Signal:
    return Signal("xid_fatal", "critical", f"GPU {gpu}: XID {code} since the last look",
                  {"gpu": str(gpu), "xid": code, "line": f"NVRM: Xid (PCI:0000:{gpu}a:00): {code}"})


def test_one_bad_gpu_on_a_dra_site_is_tainted_recorded_and_back_after_a_passing_burn_in(netbox, lab_fleet, skus,
                                                                                           kube):
    apply_schema(netbox, load_schema())
    seed(netbox, lab_fleet, skus)
    rec = netbox.nodes(site="lab-east")[0]
    publish_slice(kube, rec.name)
    ctx = SimpleNamespace(settings=SimpleNamespace(gpu_isolation="dra"), netbox=netbox, kube=kube)
    custom = k8s.CustomObjectsApi(kube.api_client)

    started = time.monotonic()
    scope = scope_of(ctx, rec, [xid(5)], allocatable=None)
    assert not scope.node_goes and [g.gpu for g in scope.gpus] == [5]
    done = quarantine(ctx, rec, scope.gpus, serials={5: "1652823054567"})
    took = time.monotonic() - started
    assert done.startswith("GPU 5 quarantined")

    rule = custom.get_cluster_custom_object(GROUP, "v1beta2", "devicetaintrules", dt.rule_name(rec.name, 5))
    assert rule["spec"]["deviceSelector"] == {"driver": "gpu.nvidia.com", "pool": rec.name, "device": "gpu-5"}
    assert {k: rule["spec"]["taint"][k] for k in ("key", "value", "effect")} == {
        "key": "gpu.nvidia.com/xid", "value": "48", "effect": "NoExecute"}
    assert rule["metadata"]["annotations"]["bringup.io/cordon-by"] == "bringup health watch"
    assert [t.gpu for t in dt.gpu_taints(kube, rec.name)] == [5]
    (gpu,) = failed_gpus(netbox, [rec.id])[rec.id]
    assert (gpu.index, gpu.status, gpu.code, gpu.serial) == (5, "failed", "xid_fatal", "1652823054567")
    journal = [e["comments"] for e in netbox.journal_entries(rec.id)]
    assert any(t.startswith("## GPU quarantined: 5") and "DeviceTaintRule" in t for t in journal)

    # a second GPU of the same node: the node goes (node_goes: more than one GPU out)
    second = scope_of(ctx, rec, [xid(2)], allocatable=None)
    assert second.node_goes and second.why_node.startswith("2 GPUs out of service")

    # the readiness gate after a passing burn-in: GPU 5 serves again, its taint lifted
    assert release_passed(ctx, rec) == ()
    assert failed_gpus(netbox, [rec.id])[rec.id] == [] and dt.gpu_taints(kube, rec.name) == []
    with pytest.raises(k8s.ApiException) as gone:
        custom.get_cluster_custom_object(GROUP, "v1beta2", "devicetaintrules", dt.rule_name(rec.name, 5))
    assert gone.value.status == 404
    journal = [e["comments"] for e in netbox.journal_entries(rec.id)]
    assert any(t.startswith("## GPU back in service: 5") and "device taint lifted" in t for t in journal)
    print(f"one-GPU fault to DeviceTaintRule and NetBox record: {took:.2f} s")

