"""GPU-level quarantine through DRA device taints (bringup/kube/device_taints.py) against the
lab Kubernetes API stand-in (a real HTTPS process) and the real kubectl: GPU 3 of a node
tainted, listed back, a rule someone else placed refused and kept, bringup's own removed.
And the lab's device plugin: an XID injected on a serving node lowers its allocatable GPUs,
``lab clear`` restores them."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from bringup.errors import KubeConflictError
from bringup.kube import device_taints as dt
from bringup.sku import load_skus, nic_counts
from lab.fleet import Fault, FaultKind, loads_fleet
from lab.inject import clear, inject
from lab.nodes.sshd import NodeDir

pytestmark = pytest.mark.integration

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "kube"
NODE = "gpu-dra-1"
GROUP = "resource.k8s.io"


def kubectl(api, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "KUBECONFIG": str(api.kubeconfig)})


def publish_slice(kube) -> dict:
    """The DRA driver's ResourceSlice of NODE, its documented gpu-0 entry repeated for the
    board's eight GPUs (device names gpu-0 ... gpu-7), published through resource.k8s.io/v1."""
    doc = yaml.safe_load((FIX / "resourceslice-gpu.yaml").read_text())
    gpu0 = doc["spec"]["devices"][0]
    doc["spec"]["devices"] = [{**copy.deepcopy(gpu0), "name": f"gpu-{i}"} for i in range(8)]
    return k8s.CustomObjectsApi(kube.api_client).create_cluster_custom_object(GROUP, "v1", "resourceslices", doc)


def selected(rule: dict, slices: list[dict]) -> list[str]:
    """The devices a rule's deviceSelector picks (driver, pool and device all match)."""
    sel = rule["spec"]["deviceSelector"]
    return [f"{s['spec']['pool']['name']}/{d['name']}" for s in slices for d in s["spec"]["devices"]
            if sel.get("driver") in (None, s["spec"]["driver"]) and sel.get("pool") in (None, s["spec"]["pool"]["name"])
            and sel.get("device") in (None, d["name"])]


def test_taint_gpu_3_list_it_refuse_a_foreign_rule_remove_our_own(kubeapi, kube):
    custom = k8s.CustomObjectsApi(kube.api_client)
    publish_slice(kube)
    # the slice is one object in both versions, found by node as the real server indexes it
    slices = custom.list_cluster_custom_object(GROUP, "v1beta2", "resourceslices",
                                               field_selector=f"spec.nodeName={NODE}")["items"]
    assert [s["apiVersion"] for s in slices] == ["resource.k8s.io/v1beta2"] and len(slices[0]["spec"]["devices"]) == 8

    t = dt.GpuTaint(node=NODE, gpu=3, key="gpu.nvidia.com/xid", value="79", effect="NoSchedule",
                    reason="XID 79 on GPU 3: fell off the bus", placed_at="2026-11-30T10:00:00+00:00")
    name = dt.taint_gpu(kube, t)
    assert name == f"bringup-gpu-{NODE}-gpu-3"
    rule = custom.get_cluster_custom_object(GROUP, "v1beta2", "devicetaintrules", name)
    assert selected(rule, slices) == [f"{NODE}/gpu-3"]           # exactly the bad GPU, nothing else
    stamped = rule["spec"]["taint"]["timeAdded"]                  # set by the server
    assert stamped and rule["metadata"]["generation"] == 1
    assert dt.gpu_taints(kube, NODE) == [t] and dt.gpu_taints(kube) == [t]

    # placed again: idempotent, the toleration clock is not restarted
    assert dt.taint_gpu(kube, t) == name
    again = custom.get_cluster_custom_object(GROUP, "v1beta2", "devicetaintrules", name)
    assert again["spec"]["taint"]["timeAdded"] == stamped and again["metadata"]["generation"] == 1

    # rules bringup did not place: the docs' own example, and one under the name bringup
    # would give GPU 5 (say an admin copied bringup's naming)
    example = yaml.safe_load((FIX / "devicetaintrule-example.yaml").read_text())
    example["spec"]["taint"].pop("timeAdded")
    example.pop("status")
    custom.create_cluster_custom_object(GROUP, "v1beta2", "devicetaintrules", example)
    squatter = copy.deepcopy(example)
    squatter["metadata"]["name"] = dt.rule_name(NODE, 5)
    squatter["spec"]["deviceSelector"] = {"driver": "gpu.nvidia.com", "pool": NODE, "device": "gpu-5"}
    custom.create_cluster_custom_object(GROUP, "v1beta2", "devicetaintrules", squatter)
    with pytest.raises(KubeConflictError, match="not bringup's"):
        dt.taint_gpu(kube, dt.GpuTaint(node=NODE, gpu=5, key="gpu.nvidia.com/xid", value="48",
                                       effect="NoExecute", reason="XID 48 on GPU 5"))
    assert dt.untaint_gpu(kube, NODE, 5) is False
    kept = custom.get_cluster_custom_object(GROUP, "v1beta2", "devicetaintrules", dt.rule_name(NODE, 5))
    assert kept["spec"]["taint"]["key"] == "dra.example.com/unhealthy"    # untouched
    assert dt.gpu_taints(kube) == [t]

    # what an operator sees: kubectl finds the rules (v1beta2 only, beside v1 of the group)
    got = kubectl(kubeapi, "get", "devicetaintrules")
    assert got.returncode == 0, got.stderr
    assert name in got.stdout and "example" in got.stdout and dt.rule_name(NODE, 5) in got.stdout
    ours = kubectl(kubeapi, "get", "devicetaintrules", "-l", f"{dt.OWNER_LABEL}=bringup", "-o", "name")
    assert ours.stdout.split() == [f"devicetaintrule.resource.k8s.io/{name}"], ours.stderr
    doc = json.loads(kubectl(kubeapi, "get", "devicetaintrule", name, "-o", "json").stdout)
    assert doc["spec"]["taint"] == {"key": t.key, "value": t.value, "effect": t.effect, "timeAdded": stamped}
    assert doc["metadata"]["annotations"]["bringup.io/cordon-by"] == "bringup"
    sl = kubectl(kubeapi, "get", "resourceslices", "--field-selector", f"spec.nodeName={NODE}")
    assert sl.returncode == 0, sl.stderr
    header, row = sl.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert row.split()[:4] == [slices[0]["metadata"]["name"], NODE, "gpu.nvidia.com", NODE]

    # bringup removes its own rule, and only that
    assert dt.untaint_gpu(kube, NODE, 3) is True
    assert dt.untaint_gpu(kube, NODE, 3) is False
    assert dt.gpu_taints(kube) == []
    left = kubectl(kubeapi, "get", "devicetaintrules", "-o", "name").stdout.split()
    assert sorted(left) == sorted(f"devicetaintrule.resource.k8s.io/{n}" for n in ("example", dt.rule_name(NODE, 5)))
    events = kubectl(kubeapi, "get", "events", "-A", "--field-selector", f"involvedObject.name={NODE}")
    assert "GpuTainted" in events.stdout and "GpuUntainted" in events.stdout, events.stderr


FLEET = """
site: t
pools: {p: {}}
nodes:
  - {name: gpu-plug-1, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.0.0.9, address: 127.0.0.8}
  - {name: gpu-plug-ts, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.0.0.10, address: 127.0.0.11}
"""


def serving_node(kubeapi, kube, name: str, labels: dict[str, str], gpus: dict[str, str]):
    """A node installed in the lab (its NodeDir) and joined to the stand-in's cluster."""
    nd = NodeDir(kubeapi.home, name)
    nd.dir.mkdir(parents=True, exist_ok=True)
    nd.state.write_text(json.dumps({"installed": True, "versions": {}}))
    k8s.CoreV1Api(kube.api_client).create_node(k8s.V1Node.from_dict({
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "capacity": gpus, "allocatable": gpus}}))
    return {n.name: n for n in loads_fleet(FLEET, nic_counts(load_skus())).nodes}[name]


def gpus(kube, name: str) -> tuple[str, str]:
    st = kube.node_state(name)
    return st.capacity.get("nvidia.com/gpu", ""), st.allocatable.get("nvidia.com/gpu", "")


def test_an_injected_xid_lowers_the_advertised_gpus_and_clear_restores_them(kubeapi, kube):
    spec = serving_node(kubeapi, kube, "gpu-plug-1", {"bringup.io/sharing": "exclusive"}, {"nvidia.com/gpu": "8"})
    inject(kubeapi.home, spec, Fault(kind=FaultKind.XID, value=79, gpu=3))
    assert gpus(kube, "gpu-plug-1") == ("8", "7")      # unhealthy: in capacity, not allocatable
    inject(kubeapi.home, spec, Fault(kind=FaultKind.XID, value=13, gpu=5))   # an application error
    inject(kubeapi.home, spec, Fault(kind=FaultKind.XID, value=48, gpu=3))   # the same GPU again
    assert gpus(kube, "gpu-plug-1") == ("8", "7")
    inject(kubeapi.home, spec, Fault(kind=FaultKind.XID, value=94, gpu=6))
    assert gpus(kube, "gpu-plug-1") == ("8", "6")
    gone, _ = clear(kubeapi.home, spec, "xid")
    assert len(gone) == 4 and gpus(kube, "gpu-plug-1") == ("8", "8")


def test_a_node_sharing_its_gpus_is_left_as_it_is(kubeapi, kube):
    spec = serving_node(kubeapi, kube, "gpu-plug-ts", {"bringup.io/sharing": "time-slicing",
                                                       "nvidia.com/gpu.sharing-strategy": "time-slicing"},
                        {"nvidia.com/gpu": "32"})
    inject(kubeapi.home, spec, Fault(kind=FaultKind.XID, value=79, gpu=3))
    assert gpus(kube, "gpu-plug-ts") == ("32", "32")
