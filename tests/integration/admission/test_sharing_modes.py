"""A MIG pool and a time-sliced pool, applied and proven end to end (issue #28, item 4):
the validating handler (``share``, ``join``, ``gate``) over real sshd, Ansible, the real
pynvml on the NVML stand-in, the kubeadm and device plugin stand-ins, the lab's API
server and kubelet, and NetBox.

- sm-mig (H200, MIG ``all-balanced`` mixed): every GPU cut 2 x 1g.18gb + 2g.35gb +
  3g.71gb through NVML; the node advertises exactly nvidia.com/mig-* x 8 GPUs, GFD says
  so, the gate's smoke pod gets one MIG device: admitted.
- sm-pending (H200, same pool): MIG mode stays pending (the GPU wants a reset): the share
  step fails with NVML's words, the node never joins.
- sm-short (H100, time-slicing x2): its device plugin finds 7 of 8 GPUs, so it advertises
  14 shares, not 16: the gate refuses it (the time-sliced pool admitted is in
  tests/integration/flows: infer-h200, x4).
"""

from __future__ import annotations

import subprocess

import pytest

from bringup.lifecycle.engine import State
from bringup.pipeline import lifecycle

pytestmark = pytest.mark.integration

BALANCED = {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}


@pytest.fixture(scope="module")
def validated(share_lab):
    """Each node through the validating handler, as a commission walk runs it: step by
    step, stopping at the first that fails. -> {node: [results]}"""
    lc = lifecycle(share_lab.ctx)
    out = {}
    for node in ("sm-mig", "sm-pending", "sm-short"):
        results = []
        for step in ("share", "join", "gate"):
            results.append(lc.run_step(node, State.VALIDATING, step))
            if not results[-1].ok:
                break
        out[node] = results
    return out


def _node(share_lab, name):
    return share_lab.netbox.nodes(names=[name])[0]


def test_a_mig_pool_node_is_cut_advertises_its_geometry_and_is_admitted(share_lab, validated):
    steps = validated["sm-mig"]
    assert [(r.step, r.ok) for r in steps] == [("share", True), ("join", True), ("gate", True)], steps
    rec = _node(share_lab, "sm-mig")
    assert rec.stage == "active" and rec.status == "active"
    st = share_lab.kube.node_state("sm-mig")
    gpu = {k: v for k, v in st.allocatable.items() if k.startswith("nvidia.com/")}
    assert gpu == {"nvidia.com/mig-1g.18gb": "16", "nvidia.com/mig-2g.35gb": "8", "nvidia.com/mig-3g.71gb": "8",
                   "nvidia.com/gpu": "0"}, gpu
    assert st.labels["nvidia.com/mig.strategy"] == "mixed"
    assert st.labels["nvidia.com/mig-3g.71gb.product"] == "NVIDIA-H200-MIG-3g.71gb"
    assert st.labels["bringup.io/sharing"] == "mig"
    # what NVML on the node says, read by the node's own nvidia-smi: four MIG devices a GPU
    node = next(n for n in share_lab.fleet.nodes if n.name == "sm-mig")
    out = subprocess.run(["ssh", "-i", str(share_lab.ctx.settings.ssh_key_file), "-p", "2222",
                          "-o", f"UserKnownHostsFile={share_lab.ctx.settings.ssh_known_hosts}",
                          "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                          f"root@{node.address}", "nvidia-smi -L"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    migs = [line.split()[1] for line in out.splitlines() if line.strip().startswith("MIG ")]
    assert sorted(migs) == sorted([p for p, n in BALANCED.items() for _ in range(n)] * 8), out
    gate = steps[-1].evidence[0].document
    names = {c["name"] for c in gate["checks"] if c["outcome"] == "pass"}
    assert {"sharing resource nvidia.com/mig-1g.18gb", "sharing label nvidia.com/mig.strategy",
            "smoke pod"} <= names, gate["checks"]
    # the smoke pod asked for one MIG device, not eight whole GPUs
    assert "allocatable nvidia.com/gpu" not in str(gate["checks"])


def test_a_gpu_whose_mig_mode_stays_pending_keeps_the_node_out(share_lab, validated):
    steps = validated["sm-pending"]
    assert [(r.step, r.ok) for r in steps] == [("share", False)], steps
    reasons = " ".join(steps[0].reasons)
    assert "pending enable" in reasons and "GPU requires restart" in reasons, reasons
    rec = _node(share_lab, "sm-pending")
    assert rec.stage == "quarantined"
    assert "MIG mode is pending" in rec.custom_fields["bringup_reason"]
    assert not share_lab.kube.node_state("sm-pending").exists   # never joined


def test_a_time_sliced_node_advertising_fewer_shares_is_refused_by_the_gate(share_lab, validated):
    steps = validated["sm-short"]
    assert [(r.step, r.ok) for r in steps] == [("share", True), ("join", True), ("gate", False)], steps
    reasons = " ".join(steps[-1].reasons)
    assert "allocatable nvidia.com/gpu: 14, time-slicing x2 needs 16" in reasons, reasons
    rec = _node(share_lab, "sm-short")
    assert rec.stage == "quarantined"
    st = share_lab.kube.node_state("sm-short")
    assert st.labels["nvidia.com/gpu.replicas"] == "2"
    assert st.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-SHARED"
