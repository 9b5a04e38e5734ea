"""The readiness gate's smoke workload: the pod, and what its outcome means.

The pod (:func:`pod_manifest`) is pinned to the node by ``nodeName`` (the scheduler is
not asked: the node is tainted and we want *this* node), tolerates the validation-pending
taint, and requests all the GPUs NetBox expects, so it only runs if the device plugin can
hand every one of them out. Its command is the policy's (``bringup/data/readiness.yaml``):
a device query (``nvidia-smi --query-gpu=... --format=csv,noheader``), then a short
single-node ``all_reduce_perf``, as the GPU Operator's validator runs a CUDA sample.

:func:`assess` reads the pod's end (phase, exit code) and its log: the device-query rows
must list the expected number of GPUs of the expected model, and the NCCL run is judged as
the burn-in agent judges it (a failure line fails it, a run cut before its summary is never
ok). A pod that did not finish, or a log the parsers cannot read, fails the gate ("unknown"
is never a pass); a pod that failed says which NCCL failure its log shows, if any. Pure: no
API calls here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bringup.admission.readiness import Check, Expected, ReadinessPolicy
from burnin.checks.tools import NCCL_ERROR_LIMITS
from burnin.parsers import UnparseableOutput, nccl

#: ``0, NVIDIA H100 80GB HBM3, 81559 MiB, 570.133.20`` (index, name, memory.total[, driver])
_QUERY_ROW = re.compile(r"^\s*(\d+),\s*([^,]+?),\s*(\d+)\s*MiB(?:,\s*([\d.]+))?\s*$")


def pod_name(node: str) -> str:
    # a DNS-1123 name: the node's name lower-cased, cut so the whole stays under 63
    return ("bringup-smoke-" + re.sub(r"[^a-z0-9-]", "-", node.lower()))[:63].rstrip("-")


def pod_manifest(policy: ReadinessPolicy, node: str, gpus: int, resource: str | None = None) -> dict[str, Any]:
    """The smoke pod for ``node``, requesting ``gpus`` GPUs (NetBox's count) of the policy's
    resource; a shared pool's pod asks for one share (``resource``: ``nvidia.com/gpu`` of a
    time-sliced node, ``nvidia.com/mig-1g.18gb``): the device plugin refuses more than one
    time-sliced replica per container (failRequestsGreaterThanOne), and one share handed
    out and used is what proves the mode works."""
    taint = policy.taint
    command = [part.replace("{gpus}", str(gpus)) for part in policy.smoke.command]
    res = {resource or policy.gpu_resource: str(gpus)}
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


def assess(outcome: PodOutcome, expected: Expected, share: bool = False) -> list[Check]:
    """The smoke pod's checks: it succeeded, its device query lists the expected GPUs, its
    NCCL run finished clean (:func:`nccl_check`). ``share``: the pod asked for one share of
    a MIG or time-sliced GPU, so its device query must list GPUs of the expected model
    (at least one, at most the node's count: how many parents a share shows is the
    runtime's), not the node's count."""
    if outcome.timed_out:
        return [Check("smoke pod", "fail", f"{outcome.name} did not finish in time (phase {outcome.phase})")]
    if outcome.phase != "Succeeded" or outcome.exit_code not in (0, None):
        why = f"exit code {outcome.exit_code}" if outcome.exit_code is not None else (outcome.reason or "no exit code")
        failed = [Check("smoke pod", "fail", f"{outcome.name} ended {outcome.phase} ({why})")]
        # the failure line of its NCCL run, if the log has one, says why it ended so
        found = nccl_check(outcome.log) if outcome.log else None
        return failed + ([found] if found and found.outcome == "fail" else [])
    if outcome.exit_code is None:
        return [Check("smoke pod", "unknown", f"{outcome.name} is {outcome.phase} but reports no exit code")]
    checks = [Check("smoke pod", "pass", f"{outcome.name} succeeded")]
    rows = parse_device_query(outcome.log)
    want_name = expected.gpu_model
    if not rows:
        checks.append(Check("smoke device query", "unknown", "the pod's log has no device-query rows"))
    else:
        odd = [r for r in rows if r.name != want_name]
        count_ok = 1 <= len(rows) <= expected.serving_gpus if share else len(rows) == expected.serving_gpus
        ok = count_ok and not odd
        detail = f"{len(rows)} GPU(s) visible in the pod" + (
            "" if ok else f", NetBox expects {'1 to ' if share else ''}{expected.serving_gpus} x {want_name}"
            + (f"; other models: {sorted({r.name for r in odd})}" if odd else ""))
        checks.append(Check("smoke device query", "pass" if ok else "fail", detail))
    checks.append(nccl_check(outcome.log))
    return checks


def nccl_check(log: str) -> Check:
    """The pod's ``all_reduce_perf`` judged as the burn-in agent judges it
    (:func:`burnin.parsers.nccl.assess`): a ``Test NCCL failure``/``Test CUDA failure``
    line, before or after any row, fails it; a run cut before its summary, or one that
    validated nothing, is unknown; a table with no failure, no wrong or out-of-bounds value
    and its summary passes."""
    try:
        parsed = nccl.parse_nccl_run(log)
    except UnparseableOutput as exc:
        return Check("smoke nccl", "unknown", f"all_reduce_perf output unreadable: {exc}")
    outcome, messages = nccl.run_outcome(nccl.assess(parsed, NCCL_ERROR_LIMITS))
    if outcome != "pass":
        return Check("smoke nccl", outcome, "all_reduce_perf: " + "; ".join(messages))
    return Check("smoke nccl", "pass", f"all_reduce_perf clean, average bus bandwidth {parsed['avg_busbw']} GB/s")
