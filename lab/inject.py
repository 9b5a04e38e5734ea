"""Faults injected into a lab node while it serves (issue #15): an XID that appears
later, ECC counts that grow, an IB port that flaps, a device plugin that loses GPUs.

A real fault shows up on a node that was healthy when it was admitted. The lab's nodes
take their GPU world from their profile (:mod:`lab.gpu.profile`), written at install from
the fleet's faults; :func:`inject` rewrites it with more faults, as the hardware would
change under a running OS, and keeps the injected ones beside the node
(``nodes/<name>/injected.json``) so a later injection adds to them. The node's next tool
run (the health watch's look, a re-burn-in) sees them. Faults the cluster shows (the
device plugin's count) are changed through the Kubernetes API stand-in instead
(:func:`advertise_gpus`): on a node joined to the lab's Kubernetes, injecting or clearing
an XID or ``device_plugin_short`` sets its whole-GPU count as NVIDIA's device plugin
would (:func:`plugin_gpus`; the XIDs it ignores are data, ``lab/gpu/device_plugin.yaml``).

A fault is checked before anything is written: :func:`parse_fault` turns an operator's
words (``bringup lab inject``) into one, refusing an unknown kind or a value that must be
a number and is not; :func:`check_fault` refuses a GPU or NIC the node's SKU lacks. Each
refusal is one :class:`LabError` naming what is valid.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from bringup.admission.labels import PREFIX
from bringup.sku import SkuSpec, load_skus
from lab.errors import LabError

from .fleet import Fault, FaultKind, NodeSpec
from .nodes.sshd import NodeDir

#: faults whose value is a number (a count, an XID code, GB/s, Gb/s, seconds, a port index);
#: the stand-ins convert it with int()/float(), so a word would fail there, after the write
NUMERIC_VALUE = frozenset({
    FaultKind.BMC_SLOW, FaultKind.ECC_UNCORRECTABLE, FaultKind.ECC_AGGREGATE, FaultKind.XID,
    FaultKind.NVLINK_ERRORS, FaultKind.LOW_BUSBW, FaultKind.NCCL_WRONG, FaultKind.NCCL_DIES,
    FaultKind.NCCL_CUT, FaultKind.IB_PORT_DOWN, FaultKind.IB_WRONG_SPEED, FaultKind.SLOW_NODE,
    FaultKind.BAD_CABLE, FaultKind.DEGRADED_RAIL, FaultKind.FLAPPING_PORT, FaultKind.DEVICE_PLUGIN_SHORT,
    FaultKind.SSH_DROP, FaultKind.PSU_LOST,
})
#: faults whose iface is a compute (InfiniBand) NIC: cxN, GPU N's rail, or its mlx5_N name
FABRIC_IFACE = frozenset({FaultKind.IB_PORT_DOWN, FaultKind.IB_WRONG_SPEED, FaultKind.DEGRADED_RAIL,
                          FaultKind.NIC_NUMA, FaultKind.FLAPPING_PORT})
#: pcie_downtrained's value: a link width (8) or a generation (gen3)
_PCIE = re.compile(r"(?i)gen\d+")
#: the faults that change what the device plugin advertises on a serving node
PLUGIN_KINDS = frozenset({FaultKind.XID, FaultKind.DEVICE_PLUGIN_SHORT})
DEVICE_PLUGIN_DATA = Path(__file__).with_name("gpu") / "device_plugin.yaml"
GPU = "nvidia.com/gpu"

log = logging.getLogger(__name__)


def _number(text: str) -> int | float | None:
    """``text`` as an int, else a finite float, else None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        num = float(text)
    except ValueError:
        return None
    return num if math.isfinite(num) else None


def parse_fault(kind: str, sku: SkuSpec, *, value: str | None = None, gpu: int | None = None,
                iface: str | None = None) -> Fault:
    """A fault as an operator names it (``bringup lab inject``), checked against the node's
    SKU before anything is written: each mistake is a :class:`LabError` saying what to fix."""
    try:
        fk = FaultKind(kind)
    except ValueError:
        raise LabError(f"unknown fault {kind!r}", hint="use one of: " + ", ".join(k.value for k in FaultKind)) from None
    val: int | float | str | None = value
    if value is not None and fk in NUMERIC_VALUE:
        val = _number(value)
        if val is None or val < 0:
            raise LabError(f"fault {fk}: --value must be a number >= 0, not {value!r}",
                           hint="a count, an XID code, GB/s, Gb/s or seconds, e.g. --value 79")
    elif value is not None and fk == FaultKind.PCIE_DOWNTRAINED:
        val = _number(value)
        if val is None and not _PCIE.fullmatch(value):
            raise LabError(f"fault {fk}: --value {value!r} is neither a link width nor a generation",
                           hint="give a width such as 8 or a generation such as gen3")
        val = value if val is None else val
    fault = {"kind": fk, "value": val, "gpu": gpu, "iface": iface}
    check_fault(Fault.model_construct(**fault), sku)   # before validation: Fault caps gpu at 15
    return Fault.model_validate({k: v for k, v in fault.items() if v is not None})


def check_fault(f: Fault, sku: SkuSpec) -> None:
    """The fault's GPU and NIC exist on a ``sku``, else a :class:`LabError` naming the valid ones."""
    from .gpu.profile import _ib_index, nic_names
    count = sku.gpu.count
    if f.gpu is not None and not 0 <= f.gpu < count:
        raise LabError(f"fault {f.kind}: no GPU {f.gpu} on a {sku.sku}", hint=f"give --gpu 0..{count - 1}")
    if f.iface is not None and f.kind in FABRIC_IFACE:
        names = nic_names(sku)
        idx = _ib_index(f, names)
        if idx is None or not 0 <= idx < len(names):
            raise LabError(f"fault {f.kind}: no NIC {f.iface!r} on a {sku.sku}",
                           hint=f"name it cx0..cx{len(names) - 1} or one of {', '.join(names)}")


def injected(home: Path, name: str) -> list[Fault]:
    path = NodeDir(home, name).dir / "injected.json"
    if not path.exists():
        return []
    return [Fault.model_validate(f) for f in json.loads(path.read_text())]


def inject(home: Path, node: NodeSpec, *faults: Fault) -> NodeSpec:
    """Add ``faults`` to an installed node's simulated hardware; returns the node as it is now."""
    from .gpu import write_node_profile
    sku = load_skus()[node.sku]
    for f in faults:
        check_fault(f, sku)
    nd = NodeDir(home, node.name)
    state = nd.read_state()
    if not state.get("installed"):
        raise LabError(f"node {node.name} is not installed: nothing to inject a fault into",
                       hint="commission it first; injection models faults that appear while a node serves")
    before = injected(home, node.name)
    now = node.model_copy(update={"faults": [*node.faults, *before, *faults]})
    counters = _counters(nd.root)  # a profile rewrite is not a reboot: the ports keep their counts
    write_node_profile(now, sku, dict(state.get("versions") or {}), nd.root)
    for path, value in counters.items():
        path.write_text(f"{value}\n")
    for f in faults:
        if f.kind == FaultKind.FLAPPING_PORT:
            _flap(nd.root, sku, f)
    path = nd.dir / "injected.json"
    path.write_text(json.dumps([f.model_dump(mode="json", exclude_none=True) for f in [*before, *faults]], indent=1))
    if any(f.kind in PLUGIN_KINDS for f in faults):
        replug(home, now, sku.gpu.count)
    return now


def clear(home: Path, node: NodeSpec, kind: str | None = None) -> tuple[list[Fault], NodeSpec]:
    """The inverse of :func:`inject`, as a repair: the node's injected faults of ``kind``
    (all of them when None) are gone from its simulated hardware. Returns (the faults
    cleared, the node as it is now). An unknown kind, or one the node was not given, is a
    :class:`LabError` naming what it has. The fleet profile's own faults stay (they are the
    node as built); counters keep their counts, as a repaired part's port would."""
    from .gpu import write_node_profile
    if kind is not None:
        try:
            kind = FaultKind(kind).value
        except ValueError:
            raise LabError(f"unknown fault {kind!r}",
                           hint="use one of: " + ", ".join(k.value for k in FaultKind)) from None
    nd = NodeDir(home, node.name)
    state = nd.read_state()
    if not state.get("installed"):
        raise LabError(f"node {node.name} is not installed: it has no injected fault to clear",
                       hint="`bringup lab inject` gives an installed node a fault")
    before = injected(home, node.name)
    gone = [f for f in before if kind is None or f.kind == kind]
    if not gone:
        has = ", ".join(sorted({str(f.kind) for f in before})) or "none"
        raise LabError(f"node {node.name} has no injected fault {kind or ''}".rstrip() + f" (injected: {has})",
                       hint="name a fault `bringup lab inject` gave it, or none to clear them all")
    kept = [f for f in before if f not in gone]
    now = node.model_copy(update={"faults": [*node.faults, *kept]})
    sku = load_skus()[node.sku]
    counters = _counters(nd.root)
    write_node_profile(now, sku, dict(state.get("versions") or {}), nd.root)
    for path, value in counters.items():
        path.write_text(f"{value}\n")
    (nd.dir / "injected.json").write_text(json.dumps([f.model_dump(mode="json", exclude_none=True) for f in kept],
                                                     indent=1))
    if any(f.kind in PLUGIN_KINDS for f in gone):
        replug(home, now, sku.gpu.count)  # a repaired GPU is healthy again once the plugin restarts
    return gone, now


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


def advertise_gpus(kube: Any, name: str, count: int, capacity: int | None = None) -> None:
    """The node's device plugin now advertises ``count`` healthy GPUs: its allocatable, and
    its capacity unless ``capacity`` says otherwise (the kubelet counts a GPU the plugin marked
    unhealthy in capacity, not in allocatable; one the plugin never found in neither)."""
    from kubernetes import client as k8s
    cap = count if capacity is None else capacity
    body = {"status": {"capacity": {GPU: str(cap)}, "allocatable": {GPU: str(count)}}}
    kube._call(f"patch node {name} status", k8s.CoreV1Api(kube.api_client).patch_node_status, name, body)


def ignored_xids(path: Path = DEVICE_PLUGIN_DATA) -> frozenset[int]:
    """The XIDs after which the device plugin keeps a GPU healthy (application errors)."""
    return frozenset(int(x) for x in (yaml.safe_load(path.read_text()) or {}).get("ignored_xids") or [])


def _xid_code(f: Fault) -> int | None:
    try:
        return int(float(f.value or 79))  # the code the profile writes (lab/gpu/profile.py)
    except (TypeError, ValueError):
        return None


def unhealthy_gpus(faults: Iterable[Fault], ignored: frozenset[int]) -> set[int]:
    """The GPUs the device plugin marks unhealthy: each one (GPU 0 when the fault names none,
    as the profile does) with an XID it does not ignore; an XID code it cannot read counts."""
    return {f.gpu if f.gpu is not None else 0 for f in faults
            if f.kind == FaultKind.XID and _xid_code(f) not in ignored}


def plugin_gpus(total: int, faults: Iterable[Fault], ignored: frozenset[int]) -> tuple[int, int]:
    """(capacity, allocatable) whole GPUs the device plugin advertises for a node of ``total``
    GPUs with ``faults``: it finds ``total``, or the last ``device_plugin_short``'s count, and
    hands out those less one per distinct GPU an XID made unhealthy."""
    faults = list(faults)
    found = total
    for f in faults:
        if f.kind == FaultKind.DEVICE_PLUGIN_SHORT:  # as the profile reads it (lab/gpu/profile.py)
            found = int(float(f.value if f.value is not None else total - 1))
    bad = {g for g in unhealthy_gpus(faults, ignored) if g < found}
    return found, max(found - len(bad), 0)


def whole_gpus_only(labels: Mapping[str, str], capacity: Mapping[str, str]) -> bool:
    """The node advertises whole GPUs only: no MIG devices, no time-sliced replicas."""
    if labels.get(f"{PREFIX}/sharing", "exclusive") != "exclusive" or labels.get("nvidia.com/mig.strategy"):
        return False
    if labels.get("nvidia.com/gpu.sharing-strategy", "none") not in ("", "none"):
        return False
    return not any(k.startswith("nvidia.com/") and k != GPU for k in capacity)


def replug(home: Path, node: NodeSpec, total: int) -> tuple[int, int] | None:
    """What the device plugin of ``node`` advertises now that its faults are ``node.faults``,
    set on its Node in the lab's Kubernetes; returns (capacity, allocatable), or None where
    nothing was set: the lab's API is not up, the node never joined, or it shares its GPUs."""
    from bringup.errors import BringupError
    from bringup.kube import KubeAdapter

    from .kubeapi.config import Paths
    kubeconfig = Paths(home).kubeconfig
    if not kubeconfig.exists():
        return None
    try:
        kube = KubeAdapter.from_kubeconfig(kubeconfig, request_timeout=5.0)
    except BringupError:
        return None
    try:
        state = kube.node_state(node.name)
        if not state.exists or GPU not in state.capacity:
            return None
        if not whole_gpus_only(state.labels, state.capacity):
            # MIG devices and time-sliced replicas are not one-per-GPU: what a shared node
            # advertises after an XID is not modelled, so it is left as it is
            log.info("node %s shares its GPUs: its advertised resources are left as they are", node.name)
            return None
        cap, alloc = plugin_gpus(total, node.faults, ignored_xids())
        advertise_gpus(kube, node.name, alloc, capacity=cap)
        return cap, alloc
    except BringupError as exc:  # the lab's Kubernetes is down: no device plugin to tell
        log.info("node %s: device plugin count not set: %s", node.name, exc)
        return None
    finally:
        kube.api_client.close()
