"""The readiness gate's smoke workload: the pod, and what its outcome means.

The pod (:func:`pod_manifest`) is pinned to the node by ``nodeName`` (the scheduler is
not asked: the node is tainted and we want *this* node), tolerates the validation-pending
taint, and requests all the GPUs NetBox expects, so it only runs if the device plugin can
hand every one of them out. Its command is the policy's (``bringup/data/readiness.yaml``):
a device query (``nvidia-smi --query-gpu=... --format=csv,noheader``), then a short
single-node ``all_reduce_perf``, as the GPU Operator's validator runs a CUDA sample.

:func:`assess` reads the pod's end (phase, exit code) and its log: the device-query rows
must list the expected number of GPUs of the expected model, and the NCCL table must parse
with no out-of-bounds values. A pod that did not finish, or a log the parsers cannot read,
fails the gate ("unknown" is never a pass). Pure: no API calls here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bringup.admission.readiness import Check, Expected, ReadinessPolicy
from burnin.parsers import UnparseableOutput, nccl

#: ``0, NVIDIA H100 80GB HBM3, 81559 MiB, 570.133.20`` (index, name, memory.total[, driver])
_QUERY_ROW = re.compile(r"^\s*(\d+),\s*([^,]+?),\s*(\d+)\s*MiB(?:,\s*([\d.]+))?\s*$")


def pod_name(node: str) -> str:
    # a DNS-1123 name: the node's name lower-cased, cut so the whole stays under 63
    return ("bringup-smoke-" + re.sub(r"[^a-z0-9-]", "-", node.lower()))[:63].rstrip("-")


def pod_manifest(policy: ReadinessPolicy, node: str, gpus: int) -> dict[str, Any]:
    """The smoke pod for ``node``, requesting ``gpus`` GPUs (NetBox's count)."""
    taint = policy.taint
    command = [part.replace("{gpus}", str(gpus)) for part in policy.smoke.command]
    res = {policy.gpu_resource: str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name(node), "namespace": policy.smoke.namespace,
                     "labels": {"app.kubernetes.io/name": "bringup-smoke", "bringup.io/node": node}},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "tolerations": [{"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}],
            "containers": [{"name": "smoke", "image": policy.smoke.image, "command": command,
                            "resources": {"limits": res, "requests": res}}],
        },
    }


@dataclass(frozen=True)
class GpuRow:
    index: int
    name: str
    memory_mib: int
    driver: str | None = None


def parse_device_query(text: str) -> list[GpuRow]:
    """The rows of ``nvidia-smi --query-gpu=index,name,memory.total[,driver_version]
    --format=csv[,noheader]`` found in ``text`` (a header line is skipped; other lines,
    such as the NCCL output after it, are not rows)."""
    rows = []
    for line in text.splitlines():
        m = _QUERY_ROW.match(line)
        if m:
            rows.append(GpuRow(int(m.group(1)), m.group(2).strip(), int(m.group(3)), m.group(4)))
    return rows


@dataclass(frozen=True)
class PodOutcome:
    """How the smoke pod ended, as the adapter read it."""

    name: str
    phase: str
    exit_code: int | None = None
    reason: str = ""
    log: str = ""
    timed_out: bool = False
    events: list[str] = field(default_factory=list)


def assess(outcome: PodOutcome, expected: Expected) -> list[Check]:
    """The smoke pod's checks: it succeeded, its device query lists the expected GPUs, its
    NCCL run parses clean."""
    if outcome.timed_out:
        return [Check("smoke pod", "fail", f"{outcome.name} did not finish in time (phase {outcome.phase})")]
    if outcome.phase != "Succeeded" or outcome.exit_code not in (0, None):
        why = f"exit code {outcome.exit_code}" if outcome.exit_code is not None else (outcome.reason or "no exit code")
        return [Check("smoke pod", "fail", f"{outcome.name} ended {outcome.phase} ({why})")]
    if outcome.exit_code is None:
        return [Check("smoke pod", "unknown", f"{outcome.name} is {outcome.phase} but reports no exit code")]
    checks = [Check("smoke pod", "pass", f"{outcome.name} succeeded")]
    rows = parse_device_query(outcome.log)
    want_name = expected.gpu_model
    if not rows:
        checks.append(Check("smoke device query", "unknown", "the pod's log has no device-query rows"))
    else:
        odd = [r for r in rows if r.name != want_name]
        ok = len(rows) == expected.gpu_count and not odd
        detail = f"{len(rows)} GPU(s) visible in the pod" + (
            "" if ok else f", NetBox expects {expected.gpu_count} x {want_name}"
            + (f"; other models: {sorted({r.name for r in odd})}" if odd else ""))
        checks.append(Check("smoke device query", "pass" if ok else "fail", detail))
    try:
        parsed = nccl.parse_nccl_perf(outcome.log)
    except UnparseableOutput as exc:
        checks.append(Check("smoke nccl", "unknown", f"all_reduce_perf output unreadable: {exc}"))
        return checks
    oob, oob_ok, busbw = parsed.get("oob_values"), parsed.get("oob_ok"), parsed.get("avg_busbw")
    wrong = nccl.wrong_total(parsed)
    if oob is None or busbw is None:
        checks.append(Check("smoke nccl", "unknown", "all_reduce_perf printed no out-of-bounds count or average"))
    elif parsed.get("validated") is False:
        checks.append(Check("smoke nccl", "unknown", "all_reduce_perf ran without validation (-c 0): nothing checked"))
    elif oob or not oob_ok or wrong:
        checks.append(Check("smoke nccl", "fail", f"all_reduce_perf found {oob} out-of-bounds values"
                            + (f", {wrong} wrong results" if wrong else "")))
    else:
        checks.append(Check("smoke nccl", "pass", f"all_reduce_perf clean, average bus bandwidth {busbw} GB/s"))
    return checks
