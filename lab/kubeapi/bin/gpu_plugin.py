"""NVIDIA device plugin and GPU Feature Discovery stand-in for simulated nodes: what the
node advertises for its GPUs (extended resources) and the GFD labels, as the kubelet
registers them (the kubeadm stand-in calls :func:`advertise`).

Stdlib only (it runs with any Python 3 on a node, beside ``kubeadm``). It reads what the
real plugin reads on a node:

- the GPUs and their MIG devices, from ``nvidia-smi -L`` (the lab's NVML world: a MIG
  geometry set through NVML shows there, as it does on a real node);
- the plugin's config file (``--config-file``; ``$BRINGUP_DEVICE_PLUGIN_CONFIG``, else
  ``/etc/nvidia/k8s-device-plugin/config.yaml`` under the node's root), ``version: v1``
  with ``flags.migStrategy`` and ``sharing.timeSlicing``. The file is read as JSON (JSON
  is YAML; bringup writes it so); a file that is not is the plugin failing to start:
  no GPU resource and no label, as a crashed plugin leaves a node.

The resource names and label values follow NVIDIA/k8s-device-plugin (the strategies of
``internal/rm`` and the labelers of ``internal/lm``): ``none`` advertises whole GPUs as
``nvidia.com/gpu``; time-slicing multiplies them by ``replicas`` (``nvidia.com/gpu.shared``
with ``renameByDefault``; the product label gets ``-SHARED`` unless renamed); ``single``
advertises the MIG devices as ``nvidia.com/gpu`` when every GPU has MIG devices of one
profile (else nothing, and GFD's ``<product>-MIG-INVALID``); ``mixed``
advertises ``nvidia.com/mig-<profile>`` per profile and the GPUs without MIG as
``nvidia.com/gpu``. ``$BRINGUP_GPU_COUNT`` (fault ``device_plugin_short``) is how many
whole GPUs the plugin finds healthy.
"""

import json
import os
import re
import shutil
import subprocess

CONFIG = "/etc/nvidia/k8s-device-plugin/config.yaml"
_GPU = re.compile(r"^GPU (\d+): (.+?) \(UUID: ([^)]+)\)\s*$")
_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]+)\)\s*$")


def listing():
    """``nvidia-smi -L`` as [(product, [MIG profile, ...]), ...]; None without nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "-L"], check=False, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    gpus = []
    for line in out.splitlines():
        m = _GPU.match(line)
        if m:
            gpus.append((m.group(2).strip(), []))
            continue
        m = _MIG.match(line)
        if m and gpus:
            gpus[-1][1].append(m.group(1))
    return gpus


def read_config():
    """The plugin's config: {} when there is no file (its defaults), None when unreadable."""
    path = os.environ.get("BRINGUP_DEVICE_PLUGIN_CONFIG") or CONFIG
    root = os.environ.get("BRINGUP_SYSROOT") or "/"
    full = os.path.join(root, path.lstrip("/"))
    try:
        with open(full) as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _product(name):
    return re.sub(r"[^A-Za-z0-9._-]", "-", name.strip().replace(" ", "-"))


def _labels(res, count, product, replicas=1, strategy="none"):
    return {f"{res}.count": str(count), f"{res}.product": product, f"{res}.replicas": str(replicas),
            f"{res}.sharing-strategy": strategy}


def advertise(gpus, config, healthy=None):
    """(resources, labels) the node shows: ``gpus`` from :func:`listing`, ``config`` from
    :func:`read_config`, ``healthy``: how many whole GPUs the plugin finds healthy."""
    if config is None or not gpus:
        return {}, {}
    flags = config.get("flags") or {}
    strategy = flags.get("migStrategy") or "none"
    product = _product(gpus[0][0])
    whole = [g for g in gpus if not g[1]]
    n_whole = len(whole) if healthy is None else min(healthy, len(whole))
    labels = {"nvidia.com/mig.capable": "true"}
    if strategy == "none":
        n = len(gpus) if healthy is None else min(healthy, len(gpus))
        ts = ((config.get("sharing") or {}).get("timeSlicing") or {})
        shared = [r for r in ts.get("resources") or [] if r.get("name") == "nvidia.com/gpu"]
        if shared and int(shared[0].get("replicas") or 1) > 1:
            replicas = int(shared[0]["replicas"])
            renamed = bool(ts.get("renameByDefault"))
            res = "nvidia.com/gpu.shared" if renamed else "nvidia.com/gpu"
            labels.update(_labels("nvidia.com/gpu", n, product if renamed else product + "-SHARED",
                                  replicas, "time-slicing"))
            return {res: n * replicas}, labels
        labels.update(_labels("nvidia.com/gpu", n, product))
        return {"nvidia.com/gpu": n}, labels
    profiles = sorted({p for _, migs in gpus for p in migs})
    if strategy == "single":
        if whole or len(profiles) != 1:
            # GFD's words for a geometry the single strategy cannot serve; nothing to hand out
            labels.update({"nvidia.com/mig.strategy": "single",
                           **_labels("nvidia.com/gpu", 0, f"{product}-MIG-INVALID", 0, "")})
            return {"nvidia.com/gpu": 0}, labels
        total = sum(len(m) for _, m in gpus)
        labels.update({"nvidia.com/mig.strategy": "single",
                       **_labels("nvidia.com/gpu", total, f"{product}-MIG-{profiles[0]}")})
        return {"nvidia.com/gpu": total}, labels
    if strategy != "mixed":
        return {}, {}  # the plugin refuses an unknown strategy and does not start
    resources = {"nvidia.com/gpu": n_whole}
    labels["nvidia.com/mig.strategy"] = "mixed"
    labels.update(_labels("nvidia.com/gpu", len(gpus), product))
    for p in profiles:
        n = sum(m.count(p) for _, m in gpus)
        resources[f"nvidia.com/mig-{p}"] = n
        labels.update(_labels(f"nvidia.com/mig-{p}", n, f"{product}-MIG-{p}"))
    return resources, labels
