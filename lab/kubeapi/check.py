"""``bringup lab check kubectl``: drive the lab API stand-in with the machine's real
``kubectl`` and check each answer, so the stand-in stays honest to the real client.

Steps create two nodes and a few pods (one owned by a DaemonSet, one with an emptyDir
volume), then get/label/taint/cordon/uncordon/drain, reading back the effect of each
with kubectl itself. Everything created is deleted at the end.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path

import yaml

Step = tuple[str, bool, str]


def _manifests(suffix: str, ns: str) -> list[dict]:
    nodes = [f"check-{suffix}-a", f"check-{suffix}-b"]
    out: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    for n in nodes:
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
                    "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                               "capacity": {"nvidia.com/gpu": "8", "cpu": "224", "pods": "110"}}})
    ds_uid = "00000000-0000-4000-8000-0000000000d5"
    out.append({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "gpu-agent", "namespace": ns},
                "spec": {"selector": {"matchLabels": {"app": "gpu-agent"}},
                         "template": {"metadata": {"labels": {"app": "gpu-agent"}},
                                      "spec": {"containers": [{"name": "agent", "image": "agent:1"}]}}}})
    out.append({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "gpu-agent-a", "namespace": ns, "labels": {"app": "gpu-agent"},
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                  "name": "gpu-agent", "uid": ds_uid, "controller": True}]},
                "spec": {"nodeName": nodes[0], "containers": [{"name": "agent", "image": "agent:1"}]}})
    for i in range(2):
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"trainer-{i}", "namespace": ns, "labels": {"app": "trainer"},
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                      "name": "trainer", "controller": True,
                                                      "uid": "00000000-0000-4000-8000-00000000000a"}]},
                    "spec": {"nodeName": nodes[0], "containers": [{"name": "t", "image": "trainer:1"}],
                             "volumes": [{"name": "scratch", "emptyDir": {}}]}})
    return out


def run_kubectl_check(home: Path, kubectl: str | None = None, timeout: float = 60) -> list[Step]:
    """Run every step; returns ``(step, ok, output)`` for each (stops after a failed setup)."""
    kubectl = kubectl or shutil.which("kubectl") or "/usr/bin/kubectl"
    kubeconfig = Path(home) / "kube" / "kubeconfig"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    suffix = secrets.token_hex(3)
    ns = f"check-{suffix}"
    node_a, node_b = f"check-{suffix}-a", f"check-{suffix}-b"
    results: list[Step] = []

    def kc(*args: str, stdin: str | None = None) -> tuple[int, str]:
        try:
            p = subprocess.run([kubectl, *args], input=stdin, capture_output=True, text=True, env=env,
                               timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 1, f"kubectl {' '.join(args)}: {exc}"
        return p.returncode, (p.stdout + p.stderr).strip()

    def step(name: str, args: list[str], verify=None, stdin: str | None = None) -> bool:
        rc, out = kc(*args, stdin=stdin)
        ok = rc == 0
        if ok and verify is not None:
            problem = verify(out)
            if problem:
                ok, out = False, f"{out}\n-- check failed: {problem}"
        results.append((name, ok, out))
        return ok

    def jsonpath(obj: str, path: str) -> str:
        return kc("get", obj, "-o", f"jsonpath={path}")[1]

    if not kubeconfig.exists():
        return [("kubeconfig", False, f"{kubeconfig} does not exist; start the lab Kubernetes API first")]
    if not step("version", ["version", "-o", "json"],
                lambda out: None if json.loads(out[out.index("{"):]).get("serverVersion") else
                "no serverVersion in the answer"):
        return results
    manifests = _manifests(suffix, ns)
    if not step("create nodes, DaemonSet and pods", ["create", "-f", "-"],
                lambda out: None if out.count(" created") == len(manifests)
                else f"expected {len(manifests)} objects created",
                stdin=yaml.safe_dump_all(manifests)):
        return results
    try:
        step("get nodes -L", ["get", "nodes", "-L", "bringup.io/pool,kubernetes.io/hostname"],
             lambda out: None if node_a in out and node_b in out and "POOL" in out else "nodes or columns missing")
        step("label", ["label", "node", node_a, "bringup.io/pool=check"],
             lambda out: None if jsonpath(f"node/{node_a}", "{.metadata.labels.bringup\\.io/pool}") == "check"
             else "label not set")
        step("get nodes -l selector", ["get", "nodes", "-l", "bringup.io/pool=check", "-o", "name"],
             lambda out: None if out.strip() == f"node/{node_a}" else f"selector returned {out!r}")
        step("taint", ["taint", "node", node_a, "bringup.io/quarantine=check:NoSchedule"],
             lambda out: None if "bringup.io/quarantine" in jsonpath(f"node/{node_a}", "{.spec.taints}")
             else "taint not set")
        step("cordon", ["cordon", node_a],
             lambda out: None if "SchedulingDisabled" in kc("get", "node", node_a)[1] else "node still schedulable")
        step("uncordon", ["uncordon", node_a],
             lambda out: None if jsonpath(f"node/{node_a}", "{.spec.unschedulable}") in ("", "false")
             else "node still unschedulable")
        step("taint removal", ["taint", "node", node_a, "bringup.io/quarantine-"],
             lambda out: None if "bringup.io/quarantine" not in jsonpath(f"node/{node_a}", "{.spec.taints}")
             else "taint still there")

        def drained(out: str) -> str | None:
            left = kc("get", "pods", "-n", ns, "-o", "name", "--field-selector", f"spec.nodeName={node_a}")[1]
            if "trainer" in left:
                return f"trainer pods still on the node: {left}"
            if "gpu-agent-a" not in left:
                return "the DaemonSet pod should have been left alone"
            if "SchedulingDisabled" not in kc("get", "node", node_a)[1]:
                return "node not cordoned after drain"
            return None

        step("drain", ["drain", node_a, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s"],
             drained)
    finally:
        rc, out = kc("delete", f"node/{node_a}", f"node/{node_b}", f"namespace/{ns}", "--wait=false")
        results.append(("cleanup", rc == 0, out))
    return results
