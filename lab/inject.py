"""Faults injected into a lab node while it serves (issue #15): an XID that appears
later, ECC counts that grow, an IB port that flaps, a device plugin that loses GPUs.

A real fault shows up on a node that was healthy when it was admitted. The lab's nodes
take their GPU world from their profile (:mod:`lab.gpu.profile`), written at install from
the fleet's faults; :func:`inject` rewrites it with more faults, as the hardware would
change under a running OS, and keeps the injected ones beside the node
(``nodes/<name>/injected.json``) so a later injection adds to them. The node's next tool
run (the health watch's look, a re-burn-in) sees them. Faults the cluster shows (the
device plugin's count) are changed through the Kubernetes API stand-in instead
(:func:`advertise_gpus`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bringup.sku import load_skus
from lab.errors import LabError

from .fleet import Fault, FaultKind, NodeSpec
from .nodes.sshd import NodeDir


def injected(home: Path, name: str) -> list[Fault]:
    path = NodeDir(home, name).dir / "injected.json"
    if not path.exists():
        return []
    return [Fault.model_validate(f) for f in json.loads(path.read_text())]


def inject(home: Path, node: NodeSpec, *faults: Fault) -> NodeSpec:
    """Add ``faults`` to an installed node's simulated hardware; returns the node as it is now."""
    from .gpu import write_node_profile
    nd = NodeDir(home, node.name)
    state = nd.read_state()
    if not state.get("installed"):
        raise LabError(f"node {node.name} is not installed: nothing to inject a fault into",
                       hint="commission it first; injection models faults that appear while a node serves")
    before = injected(home, node.name)
    now = node.model_copy(update={"faults": [*node.faults, *before, *faults]})
    counters = _counters(nd.root)  # a profile rewrite is not a reboot: the ports keep their counts
    sku = load_skus()[node.sku]
    write_node_profile(now, sku, dict(state.get("versions") or {}), nd.root)
    for path, value in counters.items():
        path.write_text(f"{value}\n")
    for f in faults:
        if f.kind == FaultKind.FLAPPING_PORT:
            _flap(nd.root, sku, f)
    path = nd.dir / "injected.json"
    path.write_text(json.dumps([f.model_dump(mode="json", exclude_none=True) for f in [*before, *faults]], indent=1))
    return now


def _counters(root: Path) -> dict[Path, int]:
    out = {}
    for path in root.glob("sys/class/infiniband/*/ports/*/counters/*"):
        text = path.read_text().strip()
        if text.isdigit():
            out[path] = int(text)
    return out


def _flap(root: Path, sku: Any, f: Fault) -> None:
    """The port went down and up (twice) and took symbol errors meanwhile, as a loose cable
    does: its counters grow by what a flap leaves in them."""
    from .gpu.profile import _ib_index, nic_names
    names = nic_names(sku)
    idx = _ib_index(f, names)
    if idx is None or idx >= len(names):
        raise LabError(f"fault {f.kind}: no NIC {f.iface!r} on a {sku.sku}", hint="name it cx0..cx7 or mlx5_N")
    counters = root / "sys/class/infiniband" / names[idx] / "ports" / "1" / "counters"
    for name, grow in (("link_downed", 2), ("link_error_recovery", 2), ("symbol_error", int(f.value or 25))):
        path = counters / name
        path.write_text(f"{int(path.read_text().strip() or 0) + grow}\n")


def advertise_gpus(kube: Any, name: str, count: int) -> None:
    """The node's device plugin now advertises ``count`` GPUs (capacity and allocatable),
    as the real plugin does when it marks devices unhealthy."""
    from kubernetes import client as k8s
    body = {"status": {"capacity": {"nvidia.com/gpu": str(count)}, "allocatable": {"nvidia.com/gpu": str(count)}}}
    k8s.CoreV1Api(kube.api_client).patch_node_status(name, body)
