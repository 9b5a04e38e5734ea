"""One bad GPU is not a bad node (issue #27, item 3): which of a health look's critical
signals take one GPU out of service and which the whole node.

``bringup/data/gpu_quarantine.yaml`` says which signal codes are confined to the GPU their
evidence names, which XIDs are the node's even when one GPU reports them, what the site's
GPU allocation can isolate (``settings.gpu_isolation``: a DRA device taint isolates any
GPU; the NVIDIA device plugin isolates only the XIDs it acts on itself, and only once the
node's allocatable shows it did), and when the node goes anyway (``node_goes``: two GPUs
out, a repeat offender), as rules over a fixed set of facts and operators.

:func:`decide` returns a :class:`Scope` value: the GPUs to quarantine, or the node's
signals (with why the node goes); signals about a GPU already out are known, not news.
Pure: signals and counts in, a value out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bringup.resources import data_file
from bringup.service.bmc_health import When, named_only
from bringup.service.health import Signal
from bringup.yamlio import load_model

Isolation = Literal["dra", "device-plugin", "none"]
#: the facts a node_goes rule may name
FACTS = ("gpus_out", "gpus_new", "healthy_gpus", "gpu_quarantines")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NodeRule(_Strict):
    when: list[When] = Field(min_length=1)
    reason: str

    @field_validator("when")
    @classmethod
    def _facts(cls, v: list[When]) -> list[When]:
        named_only(v, FACTS, "fact", "a node_goes rule")
        bad_ops = [w.op for w in v if w.op in ("matches", "contains")]
        if bad_ops:
            raise ValueError(f"operator(s) {bad_ops} are for text; the facts are counts")
        return v


class TaintKeys(_Strict):
    xid_key: str
    other_key: str


class GpuQuarantinePolicy(_Strict):
    """``bringup/data/gpu_quarantine.yaml``."""

    enabled: bool = True
    confined: list[str]
    node_xids: list[int] = Field(default_factory=list)
    device_plugin_ignored_xids: list[int] = Field(default_factory=list)
    taint: TaintKeys
    window_days: int = Field(default=30, gt=0)
    node_goes: list[NodeRule] = Field(default_factory=list)
    release_on_passing_burnin: bool = True


def load_policy(path: Path | None = None) -> GpuQuarantinePolicy:
    return load_model(path or data_file("gpu_quarantine.yaml"), GpuQuarantinePolicy, "GPU quarantine policy")


@dataclass(frozen=True)
class GpuOut:
    """One GPU to take out of service, and why."""

    gpu: int
    code: str
    message: str
    xid: int | None = None

    def taint(self, policy: GpuQuarantinePolicy) -> tuple[str, str]:
        """(key, value) of the device taint this GPU gets on a DRA site."""
        if self.xid is not None:
            return policy.taint.xid_key, str(self.xid)
        return policy.taint.other_key, self.code


@dataclass(frozen=True)
class Scope:
    """What one look takes out: ``gpus`` (the node keeps serving), or the node (``node``
    holds the signals it goes for, ``why_node`` the rule when one sent it)."""

    gpus: tuple[GpuOut, ...] = ()
    node: tuple[Signal, ...] = ()
    why_node: str = ""
    #: signals about GPUs already out of service: recorded, not acted on again
    known: tuple[Signal, ...] = ()
    #: why a confined finding could not be isolated on this site (it went with the node)
    not_isolated: tuple[str, ...] = ()

    @property
    def node_goes(self) -> bool:
        return bool(self.node)


def _gpu_of(s: Signal) -> int | None:
    raw = s.evidence.get("gpu")
    text = str(raw).strip() if raw is not None else ""
    return int(text) if text.isdigit() else None


def _xid_of(s: Signal) -> int | None:
    raw = s.evidence.get("xid")
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def _isolatable(policy: GpuQuarantinePolicy, isolation: Isolation, out: GpuOut, shared: bool) -> str:
    """Why the site cannot keep work off this GPU ("" when it can)."""
    if isolation == "none":
        return "the site isolates no single GPU (settings: gpu_isolation none)"
    if isolation == "device-plugin" and shared:
        return (f"GPU {out.gpu}: the node's pool shares its GPUs (MIG or time-slicing), and what its device "
                "plugin hands out is shares, not GPUs one by one")
    if isolation == "device-plugin":
        if out.xid is None:
            return (f"GPU {out.gpu}: {out.code} is not an XID, and the device plugin marks GPUs unhealthy "
                    "only for XIDs")
        if out.xid in policy.device_plugin_ignored_xids:
            return f"GPU {out.gpu}: the device plugin does not mark a GPU unhealthy for XID {out.xid}"
    return ""


def _facts(out: set[int], new: int, expected: int, quarantines: int) -> dict[str, int]:
    return {"gpus_out": len(out), "gpus_new": new, "healthy_gpus": max(expected - len(out), 0),
            "gpu_quarantines": quarantines}


def _reason(rule: NodeRule, facts: Mapping[str, Any], policy: GpuQuarantinePolicy) -> str:
    values = {**facts, "window_days": policy.window_days}
    try:
        return rule.reason.format(**values)
    except (KeyError, IndexError, ValueError):
        return rule.reason   # a reason written with an unknown field is shown as written


def decide(policy: GpuQuarantinePolicy, signals: Sequence[Signal], *, isolation: Isolation,
           expected_gpus: int, out_already: Sequence[int] = (), quarantines_in_window: int = 0,
           allocatable: int | None = None, shared: bool = False) -> Scope:
    """The scope of one look's critical ``signals`` on a node of ``expected_gpus`` GPUs.

    ``out_already``: the node's GPUs already out of service (NetBox); ``quarantines_in_window``:
    its GPU quarantines in the policy's window before this look; ``allocatable``: the whole
    GPUs its device plugin advertises (None: not read). A ``gpus_unallocatable`` shortfall
    that the GPUs out of service explain is no signal; on a device-plugin site a GPU this
    look takes out must show in allocatable, or the plugin still hands it out and the node goes.
    ``shared``: the node's pool shares its GPUs (MIG, time-slicing): its device plugin's
    shares are not one GPU's, so only a DRA taint isolates a GPU there.
    """
    crit = [s for s in signals if s.severity == "critical"]
    if not policy.enabled:
        return Scope(node=tuple(crit), why_node="GPU quarantine is off (gpu_quarantine.yaml: enabled)" if crit else "")
    already = set(out_already)
    gpus: dict[int, GpuOut] = {}
    node: list[Signal] = []
    known: list[Signal] = []
    short: list[Signal] = []
    for s in crit:
        gpu = _gpu_of(s) if s.code in policy.confined else None
        xid = _xid_of(s)
        if s.code == "gpus_unallocatable":
            short.append(s)
        elif gpu is None or (xid is not None and xid in policy.node_xids):
            node.append(s)
        elif gpu in already:
            known.append(s)
        elif gpu not in gpus:
            gpus[gpu] = GpuOut(gpu, s.code, s.message, xid)
    out = already | set(gpus)
    not_isolated = tuple(w for w in (_isolatable(policy, isolation, g, shared) for g in gpus.values()) if w)
    for s in short:
        got = s.evidence.get("allocatable")
        whole = s.evidence.get("resource", "nvidia.com/gpu") == "nvidia.com/gpu" and not shared
        if not whole or not isinstance(got, int) or got < expected_gpus - len(out):
            node.append(s)   # fewer GPUs than even the quarantined ones explain
    if isolation == "device-plugin" and not shared and gpus and not not_isolated and allocatable is not None \
            and allocatable > expected_gpus - len(out):
        still = (f"the device plugin still advertises {allocatable} GPUs with {len(out)} out of "
                 f"{expected_gpus}: GPU(s) {sorted(gpus)} may still be handed out")
        not_isolated += (still,)
    # when the node goes, the GPU findings go with it (an explained shortfall and what is
    # known already do not)
    with_node = tuple(node) + tuple(s for s in crit if s not in node and s.code != "gpus_unallocatable"
                                    and s not in known)
    if node or not_isolated:
        return Scope(node=with_node, why_node="; ".join(not_isolated), known=tuple(known), not_isolated=not_isolated)
    if not gpus:
        return Scope(known=tuple(known))
    facts = _facts(out, len(gpus), expected_gpus, quarantines_in_window + len(gpus))
    for rule in policy.node_goes:
        if all(w.holds(facts) for w in rule.when):
            return Scope(node=with_node, why_node=_reason(rule, facts, policy), known=tuple(known))
    return Scope(gpus=tuple(sorted(gpus.values(), key=lambda g: g.gpu)), known=tuple(known))


@dataclass(frozen=True)
class GpuCount:
    """A node's GPUs as the gate and the report count them."""

    expected: int
    out: tuple[int, ...] = field(default_factory=tuple)

    @property
    def healthy(self) -> int:
        return max(self.expected - len(set(self.out)), 0)
