"""``bringup lab check kubectl``: drive the lab API stand-in with the machine's real
``kubectl`` and check each answer, so the stand-in stays honest to the real client.

Steps create two nodes and a few pods (one owned by a DaemonSet, one with an emptyDir
volume), then get/label/taint/cordon/uncordon/drain, reading back the effect of each
with kubectl itself. A pod with a command runs on the second node, which points at a lab
node's sshd (``ssh_node``): ``get pods -w`` must see its phases, ``logs`` its output, and
its exit code must come back. A node condition set through ``nodes/status`` and the
kubelet's cordon Events must show in ``describe node`` and ``get events``. Everything
created is deleted at the end.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import yaml

Step = tuple[str, bool, str]


def _manifests(suffix: str, ns: str, ssh_node: tuple[str, int] | None = None) -> list[dict]:
    nodes = [f"check-{suffix}-a", f"check-{suffix}-b"]
    out: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    for n in nodes:
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
                "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                           "capacity": {"nvidia.com/gpu": "8", "cpu": "224", "pods": "110"}}}
        if n.endswith("-b") and ssh_node:  # the stand-in kubelet reaches this node at a lab node's sshd
            node["metadata"]["annotations"] = {"lab.bringup.io/ssh-port": str(ssh_node[1])}
            node["status"]["addresses"] = [{"type": "InternalIP", "address": ssh_node[0]}]
        out.append(node)
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


def _smoke_pod(ns: str, node: str, marker: str) -> dict:
    script = f"echo {marker} on $BRINGUP_NODE; echo to-stderr >&2; exit 3"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "smoke", "namespace": ns},
            "spec": {"nodeName": node, "restartPolicy": "Never",
                     "containers": [{"name": "smoke", "image": "busybox", "command": ["sh", "-c", script]}]}}


def _until(probe: Callable[[], str | None], wait: float = 20.0) -> str | None:
    """None once ``probe`` says nothing is wrong, else its last complaint after ``wait``."""
    deadline = time.monotonic() + wait
    while True:
        problem = probe()
        if problem is None or time.monotonic() > deadline:
            return problem
        time.sleep(0.3)


def run_kubectl_check(home: Path, kubectl: str | None = None, timeout: float = 60,
                      ssh_node: tuple[str, int] | None = None) -> list[Step]:
    """Run every step; returns ``(step, ok, output)`` for each (stops after a failed setup).
    ``ssh_node`` is ``(address, port)`` of a lab node's sshd for the pod-running steps."""
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
    manifests = _manifests(suffix, ns, ssh_node)
    if not step("create nodes, DaemonSet and pods", ["create", "-f", "-"],
                lambda out: None if out.count(" created") == len(manifests)
                else f"expected {len(manifests)} objects created",
                stdin=yaml.safe_dump_all(manifests)):
        return results
    try:
        _pod_steps(results, step, kc, [kubectl], env, ns, node_b, suffix, ssh_node)
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
        condition = {"type": "KernelDeadlock", "status": "True", "reason": "DockerHung",
                     "message": f"task docker:7 blocked for more than 300 seconds ({suffix})"}
        step("node condition (nodes/status)", ["patch", "node", node_a, "--subresource=status", "-p",
                                               json.dumps({"status": {"conditions": [condition]}})])

        def described() -> str | None:
            out = kc("describe", "node", node_a)[1]
            events = out.split("\nEvents:", 1)[-1]
            if "KernelDeadlock" not in out or "DockerHung" not in out:
                return "the KernelDeadlock condition is not under Conditions"
            if "NodeNotSchedulable" not in events:
                return "the kubelet's NodeNotSchedulable event is not under Events"
            return None
        step("describe node", ["describe", "node", node_a], lambda out: _until(described))
        step("get events (node)", ["get", "events", "--field-selector",
                                   f"involvedObject.kind=Node,involvedObject.name={node_a}"],
             lambda out: None if "NodeNotSchedulable" in out and f"node/{node_a}" in out
             else "no NodeNotSchedulable event of the node")
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


def _pod_steps(results: list[Step], step: Callable[..., bool], kc: Callable[..., tuple[int, str]],
               kubectl: list[str], env: dict[str, str], ns: str, node: str, suffix: str,
               ssh_node: tuple[str, int] | None) -> None:
    """A pod the stand-in kubelet runs over SSH: watch, exit code, logs, its Events."""
    if ssh_node is None:
        why = "no lab node answers SSH: install one (commission a node) so the stand-in kubelet can run pods"
        results.append(("run a pod on a node", False, why))
        return
    marker = f"check-{suffix}"
    watch = subprocess.Popen([*kubectl, "get", "pods", "-n", ns, "-w", "--request-timeout=30s"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=env)
    try:
        time.sleep(0.5)  # let the watch start before the pod exists

        def finished(out: str) -> str | None:
            def probe() -> str | None:
                phase = kc("get", "pod", "smoke", "-n", ns, "-o", "jsonpath={.status.phase}")[1]
                return None if phase == "Failed" else f"pod phase is {phase!r}, expected Failed"
            problem = _until(probe)
            code = kc("get", "pod", "smoke", "-n", ns, "-o",
                      "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}")[1]
            return problem or (None if code == "3" else f"exit code {code!r}, expected 3")
        step("run a pod on a node over SSH", ["create", "-f", "-"], finished,
             stdin=json.dumps(_smoke_pod(ns, node, marker)))
    finally:
        watch.terminate()
        seen = watch.communicate(timeout=10)[0]
    # the watch saw the pod created, then running, then its container's failure
    states = [line.split()[2] for line in seen.splitlines() if line.startswith("smoke ")]
    ok = states[:1] == ["ContainerCreating"] and "Error" in states
    results.append(("get pods -w", ok, seen.strip() + ("" if ok else f"\n-- check failed: saw {states}")))
    step("logs", ["logs", "-n", ns, "smoke"],
         lambda out: None if f"{marker} on " in out and "to-stderr" in out else "the command's output is missing")
    step("get events (pod)", ["get", "events", "-n", ns],
         lambda out: None if "Started" in out and "pod/smoke" in out else "no Started event of the pod")
