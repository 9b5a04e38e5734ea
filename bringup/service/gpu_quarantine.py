"""One bad GPU taken out of service while its node keeps serving (issue #27, item 3): the
health look's scope read with NetBox's facts, and the GPU quarantine carried out.

:func:`scope_of` asks :func:`bringup.service.gpu_scope.decide` with what NetBox knows of
the node (its GPUs already out: failed inventory items; its GPU quarantines in the
policy's window: journal entries) and the site's ``gpu_isolation``. NetBox is read only
when the look has critical signals, so a quiet fleet costs nothing more.

:func:`quarantine` takes the scope's GPUs out: each is recorded failed in NetBox (an
inventory item on the node, :mod:`bringup.netbox.gpu_records`), tainted on a DRA site (a
``DeviceTaintRule`` on its device with the effect its finding class gets,
:mod:`bringup.kube.device_taints`; on a device-plugin site the plugin already marked it
unhealthy and the scope checked allocatable shows it), and journaled. The node's stage is
not touched: it stays active, on its other GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from bringup.context import Context
from bringup.service.gpu_scope import GpuOut, GpuQuarantinePolicy, Scope, decide, load_policy
from bringup.service.health import Signal, critical
from bringup.times import parse_time

#: the head of the journal entry of a GPU quarantine (counted for the repeat-offender rule)
GPU_HEAD = "## GPU quarantined: "


def quarantines_since(entries: Sequence[dict], since: datetime) -> int:
    """How many GPU quarantines a node's journal ``entries`` record since ``since``."""
    n = 0
    for e in entries:
        at = parse_time(str(e.get("created") or ""))
        if str(e.get("comments") or "").startswith(GPU_HEAD) and at is not None and at >= since:
            n += 1
    return n


def scope_of(ctx: Context, rec, signals: Sequence[Signal], allocatable: int | None,
             policy: GpuQuarantinePolicy | None = None, *, now: datetime | None = None, shared: bool = False) -> Scope:
    """The scope of a look's ``signals`` on node ``rec``: GPUs to quarantine, or the node.
    ``shared``: its pool shares its GPUs (MIG, time-slicing)."""
    crit = critical(signals)
    if not crit:
        return Scope()
    from bringup.netbox.gpu_records import failed_gpus
    policy = policy or load_policy()
    isolation = getattr(ctx.settings, "gpu_isolation", "device-plugin")
    out = sorted({g.index for g in failed_gpus(ctx.netbox, [rec.id]).get(rec.id, [])})
    kw = {"isolation": isolation, "expected_gpus": rec.sku.gpu.count, "out_already": out,
          "allocatable": allocatable, "shared": shared}
    scope = decide(policy, crit, **kw)
    if scope.gpus and any("gpu_quarantines" in w.field for r in policy.node_goes for w in r.when):
        since = (now or datetime.now(UTC)) - timedelta(days=policy.window_days)
        count = quarantines_since(ctx.netbox.journal_entries(rec.id), since)
        scope = decide(policy, crit, quarantines_in_window=count, **kw)
    return scope


def _effect(code: str) -> str:
    from bringup.service.blastradius import load_policy as guard_policy
    from bringup.service.health import load_policy as watch_policy
    return watch_policy().effect(guard_policy().finding_classes.of(code))


def quarantine(ctx: Context, rec, gpus: Sequence[GpuOut], policy: GpuQuarantinePolicy | None = None,
               *, by: str = "bringup health watch", serials: Mapping[int, str] | None = None) -> str:
    """Take ``gpus`` of ``rec`` out of service; what was done, in words. ``serials``: each
    GPU's serial by NVML index (the look's inventory), recorded with it."""
    from bringup.kube.device_taints import GpuTaint, taint_gpu
    from bringup.netbox.gpu_records import mark_gpu_failed
    if not gpus:
        return ""
    policy = policy or load_policy()
    isolation = getattr(ctx.settings, "gpu_isolation", "device-plugin")
    at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = []
    for g in gpus:
        mark_gpu_failed(ctx.netbox, rec.id, rec.name, g.gpu, reason=g.message[:200], code=g.code,
                        serial=(serials or {}).get(g.gpu, ""))
        if isolation == "dra":
            key, value = g.taint(policy)
            name = taint_gpu(ctx.kube, GpuTaint(node=rec.name, gpu=g.gpu, key=key, value=value,
                                                effect=_effect(g.code), reason=g.message, placed_by=by,
                                                placed_at=at))
            lines.append(f"GPU {g.gpu}: DeviceTaintRule {name} ({key}={value}:{_effect(g.code)})")
        else:
            lines.append(f"GPU {g.gpu}: the device plugin marked it unhealthy (allocatable dropped)")
    which = ", ".join(str(g.gpu) for g in gpus)
    text = (f"{GPU_HEAD}{which}\n\nThe node keeps serving on its other GPUs; NetBox records the GPU failed "
            f"(inventory item), by {by}.\n\n" + "\n".join(f"- {g.message}" for g in gpus)
            + "\n\nKubernetes:\n" + "\n".join(f"- {x}" for x in lines) + "\n")
    ctx.netbox.journal(rec.id, text, kind="warning")
    return f"GPU {which} quarantined; the node keeps serving on its other GPUs"


def release_passed(ctx: Context, rec, policy: GpuQuarantinePolicy | None = None) -> tuple[int, ...]:
    """At the readiness gate: the node's GPUs still out of service. Where the policy says a
    passing burn-in brings them back (``release_on_passing_burnin``; the node reached the gate
    through one that tested every GPU), they are released (NetBox, the DRA taint, the
    journal) and none is left out; else they stay out and the gate expects the others."""
    from bringup.kube.device_taints import untaint_gpu
    from bringup.netbox.gpu_records import failed_gpus, release_gpu
    policy = policy or load_policy()
    out = sorted({g.index for g in failed_gpus(ctx.netbox, [rec.id]).get(rec.id, [])})
    if not out or not policy.release_on_passing_burnin:
        return tuple(out)
    lines = []
    for index in out:
        release_gpu(ctx.netbox, rec.id, index, note="passed the burn-in before the readiness gate")
        if getattr(ctx.settings, "gpu_isolation", "device-plugin") == "dra":
            lifted = untaint_gpu(ctx.kube, rec.name, index)
            lines.append(f"GPU {index}: device taint {'lifted' if lifted else 'already gone'}")
    which = ", ".join(map(str, out))
    ctx.netbox.journal(rec.id, f"## GPU back in service: {which}\n\nThe burn-in before the readiness gate tested "
                               f"every GPU and passed: GPU {which} serves again (NetBox: active).\n"
                       + "".join(f"\n- {x}" for x in lines) + ("\n" if lines else ""), kind="success")
    return ()
