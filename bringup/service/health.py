"""The health watch between burn-ins: what changed on an active node since the last look
(issue #15, item 2).

One *look* is a short run of the burn-in agent (``checks`` of
``bringup/data/healthwatch.yaml``: inventory, ECC, NVLink, XID, network; no stress) plus
the node's Kubernetes conditions. :func:`snapshot` reads the agent's result document into a
:class:`Snapshot`; :func:`assess` compares it with the previous one (kept in NetBox as
evidence) and returns :class:`Signal` values with the severity the policy gives them:

- ``critical``: the caller cordons, taints, drains, records and queues a re-burn-in (the
  blast-radius guard, :mod:`bringup.service.blastradius`, decides whether it may);
- ``warning``: recorded and watched, not acted on.

Counters are compared as deltas: a lifetime count that did not grow is old news (the
node was admitted with it); a volatile count that went *down* means the driver reloaded,
and the whole new count is new. On the first look there is no previous snapshot, and
everything the look shows counts as new: the node's burn-in, which it passed, is the
baseline. A check that errored is a ``check_unreadable`` signal: not a fault, never health.
What the node's BMC says (sensors, power supplies, leaks, the SEL) is judged by
:mod:`bringup.service.bmc_health` (the policy's ``bmc:`` section) and kept in the snapshot's
``bmc`` part (absent from snapshots older than it, which still load).
Pure: documents in, values out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.resources import data_file
from bringup.service.bmc_health import BMC_SIGNAL_CODES, BmcLook, BmcPolicy
from bringup.service.findings import Effect, FindingClass
from bringup.yamlio import load_file, validation_error

Severity = Literal["critical", "warning"]


class SignalRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    severity: Severity
    #: the signal fires when the delta is above this (rules on counts only)
    more_than: float | None = Field(default=None, ge=0)


class WatchPolicy(BaseModel):
    """``bringup/data/healthwatch.yaml``."""

    model_config = ConfigDict(extra="forbid")
    interval_minutes: int = Field(gt=0)
    checks: list[str] = Field(min_length=1)
    signals: dict[str, SignalRule]
    ib_error_counters: list[str]
    conditions: dict[str, Severity]
    #: the quarantine taint's effect per finding class (bringup.service.findings)
    taint_effects: dict[FindingClass, Effect] = Field(default_factory=dict)
    #: what the watch reads from each node's BMC and how it grades it; None: the BMC is not read
    bmc: BmcPolicy | None = None

    def effect(self, cls: FindingClass) -> Effect:
        """The taint effect for a finding of class ``cls`` (NoSchedule when the file says none)."""
        return self.taint_effects.get(cls, "NoSchedule")

    def rule(self, code: str) -> SignalRule:
        try:
            return self.signals[code]
        except KeyError:
            raise KeyError(f"healthwatch.yaml has no rule for signal {code!r}") from None


#: every signal code assess() can raise: the policy must give each a rule
SIGNAL_CODES = ("xid_fatal", "xid_other", "ecc_uncorrected_new", "ecc_corrected_growth", "row_remap_pending",
                "row_remap_failure", "nvlink_down", "ib_port_down", "ib_link_downed_growth", "ib_error_growth",
                "check_unreadable", "gpus_unallocatable")


def load_policy(path: Path | None = None) -> WatchPolicy:
    path = path or data_file("healthwatch.yaml")
    doc = load_file(path)
    try:
        policy = WatchPolicy.model_validate(doc.data or {})
    except ValidationError as exc:
        raise validation_error(exc, doc, "health-watch policy") from None
    missing = [c for c in SIGNAL_CODES + (BMC_SIGNAL_CODES if policy.bmc else ()) if c not in policy.signals]
    if missing:
        from bringup.errors import ConfigError
        raise ConfigError(f"health-watch policy {path} has no rule for signals {missing}",
                          hint="give each a severity under signals:")
    return policy


# --- what one look saw ------------------------------------------------------------------------
@dataclass(frozen=True)
class GpuHealth:
    uncorrected_volatile: int | None = None
    uncorrected_aggregate: int | None = None
    corrected_volatile: int | None = None
    remap_pending: bool = False
    remap_failure: bool = False
    nvlinks_down: tuple[int, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    gpus: dict[str, GpuHealth] = field(default_factory=dict)
    #: each XID event as (gpu, xid, kernel log line or source): the identity across looks
    xids: tuple[tuple[str, int, str], ...] = ()
    #: IB port -> (state text, counters)
    ib_ports: dict[str, tuple[str, dict[str, int]]] = field(default_factory=dict)
    #: checks of the look that did not answer (error/unsupported), with why
    unreadable: dict[str, str] = field(default_factory=dict)
    #: what the BMC showed (SEL marker, findings present); None where it was not read
    bmc: BmcLook | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"gpus": {k: asdict(v) for k, v in self.gpus.items()},
               "xids": [list(x) for x in self.xids],
               "ib_ports": {k: {"state": s, "counters": c} for k, (s, c) in self.ib_ports.items()},
               "unreadable": dict(self.unreadable)}
        if self.bmc is not None:
            doc["bmc"] = self.bmc.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Snapshot:
        gpus = {str(k): GpuHealth(**{**v, "nvlinks_down": tuple(v.get("nvlinks_down") or ())})
                for k, v in (doc.get("gpus") or {}).items()}
        return cls(gpus=gpus, xids=tuple((str(g), int(x), str(s)) for g, x, s in doc.get("xids") or []),
                   ib_ports={k: (str(v.get("state", "")), dict(v.get("counters") or {}))
                             for k, v in (doc.get("ib_ports") or {}).items()},
                   unreadable=dict(doc.get("unreadable") or {}),
                   bmc=BmcLook.from_json(doc["bmc"]) if isinstance(doc.get("bmc"), Mapping) else None)


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def snapshot(result_doc: Mapping[str, Any], wanted: Sequence[str] = ()) -> Snapshot:
    """The agent's result document (``python3 -m burnin run``) as a snapshot. A check the
    look wanted that is missing from the document counts as unreadable."""
    checks = {c.get("name"): c for c in result_doc.get("checks") or [] if isinstance(c, Mapping)}
    unreadable = {n: "missing from the agent's result" for n in wanted if n not in checks}
    for name, c in checks.items():
        if c.get("status") in ("error", "unsupported", "skip"):
            msgs = [f.get("message", "") for f in c.get("findings") or [] if isinstance(f, Mapping)]
            unreadable[str(name)] = f"{c.get('status')}: " + ("; ".join(m for m in msgs if m) or c.get("summary", ""))
    gpus: dict[str, dict[str, Any]] = {}
    for g in (checks.get("ecc") or {}).get("data", {}).get("gpus") or []:
        rows = g.get("remapped_rows") or {}
        gpus[str(g.get("gpu"))] = {"uncorrected_volatile": _int(g.get("uncorrected_volatile")),
                                   "uncorrected_aggregate": _int(g.get("uncorrected_aggregate")),
                                   "corrected_volatile": _int(g.get("corrected_volatile")),
                                   "remap_pending": bool(rows.get("pending")), "remap_failure": bool(rows.get("failure"))}
    for g in (checks.get("nvlink") or {}).get("data", {}).get("gpus") or []:
        down = tuple(int(link["link"]) for link in g.get("links") or [] if not link.get("active"))
        gpus.setdefault(str(g.get("gpu")), {})["nvlinks_down"] = down
    xids = tuple((str(e.get("gpu")), int(e["xid"]), str(e.get("line") or e.get("source") or ""))
                 for e in (checks.get("xid") or {}).get("data", {}).get("events") or [] if "xid" in e)
    ports = {}
    for name, p in ((checks.get("network") or {}).get("data", {}).get("ib_ports") or {}).items():
        counters = {k: int(v) for k, v in (p.get("counters") or {}).items() if _int(v) is not None}
        ports[str(name)] = (str(p.get("state") or ""), counters)
    return Snapshot(gpus={k: GpuHealth(**v) for k, v in gpus.items()}, xids=xids, ib_ports=ports,
                    unreadable=unreadable)


# --- what changed ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Condition:
    """A node condition as the API server shows it."""

    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class Signal:
    code: str
    severity: Severity
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)


def _delta(now: int | None, before: int | None, *, volatile: bool) -> int | None:
    if now is None:
        return None
    if before is None:
        return now
    if now < before:
        # a volatile counter restarts when the driver reloads: all of it is new; a lifetime
        # counter never goes down, so a lower one is a different GPU in the slot
        return now if volatile else None
    return now - before


def _sig(policy: WatchPolicy, code: str, message: str, **evidence: Any) -> Signal:
    return Signal(code, policy.rule(code).severity, message, evidence)


def _over(policy: WatchPolicy, code: str, value: int | None) -> bool:
    limit = policy.rule(code).more_than
    return value is not None and value > (limit or 0)


def _gpu_signals(policy: WatchPolicy, prev: Snapshot | None, cur: Snapshot) -> list[Signal]:
    out = []
    for gpu, g in sorted(cur.gpus.items()):
        p = prev.gpus.get(gpu) if prev else None
        new_unc = [d for d in (_delta(g.uncorrected_volatile, p and p.uncorrected_volatile, volatile=True),
                               _delta(g.uncorrected_aggregate, p and p.uncorrected_aggregate, volatile=False))
                   if d is not None]
        if new_unc and _over(policy, "ecc_uncorrected_new", max(new_unc)):
            out.append(_sig(policy, "ecc_uncorrected_new", f"GPU {gpu}: {max(new_unc)} new uncorrectable ECC "
                            "error(s) since the last look", gpu=gpu, volatile=g.uncorrected_volatile,
                            aggregate=g.uncorrected_aggregate))
        corr = _delta(g.corrected_volatile, p and p.corrected_volatile, volatile=True)
        if _over(policy, "ecc_corrected_growth", corr):
            out.append(_sig(policy, "ecc_corrected_growth", f"GPU {gpu}: {corr} new corrected ECC errors",
                            gpu=gpu, delta=corr))
        if g.remap_pending:
            out.append(_sig(policy, "row_remap_pending", f"GPU {gpu}: a row remapping is pending (needs a GPU "
                            "reset)", gpu=gpu))
        if g.remap_failure:
            out.append(_sig(policy, "row_remap_failure", f"GPU {gpu}: row remapping failed (no spare rows left)",
                            gpu=gpu))
        newly_down = sorted(set(g.nvlinks_down) - set(p.nvlinks_down if p else ()))
        if _over(policy, "nvlink_down", len(newly_down)):
            out.append(_sig(policy, "nvlink_down", f"GPU {gpu}: NVLink(s) {newly_down} went down", gpu=gpu,
                            links=newly_down))
    return out


def _xid_signals(policy: WatchPolicy, prev: Snapshot | None, cur: Snapshot, fatal: set[int]) -> list[Signal]:
    seen = set(prev.xids) if prev else set()
    out = []
    for gpu, xid, line in cur.xids:
        if (gpu, xid, line) in seen:
            continue
        code = "xid_fatal" if xid in fatal else "xid_other"
        out.append(_sig(policy, code, f"GPU {gpu}: XID {xid} since the last look", gpu=gpu, xid=xid, line=line))
    return out


def _ib_signals(policy: WatchPolicy, prev: Snapshot | None, cur: Snapshot) -> list[Signal]:
    out = []
    for port, (state, counters) in sorted(cur.ib_ports.items()):
        if "ACTIVE" not in state.upper():
            out.append(_sig(policy, "ib_port_down", f"IB port {port} is {state or 'in no known state'}", port=port))
        before = prev.ib_ports.get(port, ("", {}))[1] if prev else {}
        if not before:
            continue  # growth needs two readings
        downed = _delta(counters.get("link_downed"), before.get("link_downed"), volatile=False)
        if _over(policy, "ib_link_downed_growth", downed):
            out.append(_sig(policy, "ib_link_downed_growth", f"IB port {port}: link went down {downed} time(s) "
                            "since the last look (a flapping link)", port=port, delta=downed))
        errs = [_delta(counters.get(c), before.get(c), volatile=False) for c in policy.ib_error_counters]
        total = sum(e for e in errs if e is not None)
        if _over(policy, "ib_error_growth", total):
            out.append(_sig(policy, "ib_error_growth", f"IB port {port}: {total} new link errors", port=port,
                            delta=total))
    return out


def condition_signals(policy: WatchPolicy, conditions: Sequence[Condition]) -> list[Signal]:
    out = []
    for c in conditions:
        if c.type == "Ready":
            if c.status != "True":
                out.append(Signal("condition_Ready", policy.conditions.get("Ready", "warning"),
                                  f"node not Ready ({c.reason or c.status}): {c.message}".rstrip(": "),
                                  {"condition": c.type, "status": c.status, "reason": c.reason}))
            continue
        if c.status == "True":
            sev = policy.conditions.get(c.type, "warning")
            out.append(Signal(f"condition_{c.type}", sev, f"node condition {c.type} ({c.reason}): {c.message}",
                              {"condition": c.type, "reason": c.reason, "message": c.message}))
    return out


def allocatable_signals(policy: WatchPolicy, allocatable: Mapping[str, str] | None, expected: int,
                        resource: str = "nvidia.com/gpu") -> list[Signal]:
    """The device plugin hands out fewer GPUs than NetBox says the node has (it marked some
    unhealthy, or lost them): the node serves less than it is counted for. An answer that is
    missing or not a count is unknown, and said so."""
    raw = (allocatable or {}).get(resource)
    if raw is None or not str(raw).strip().isdigit():
        return [_sig(policy, "check_unreadable", f"allocatable {resource} is {raw!r}: not a count", check="allocatable")]
    if int(raw) < expected:
        return [_sig(policy, "gpus_unallocatable", f"the device plugin advertises {raw} {resource}, NetBox expects "
                     f"{expected}", allocatable=int(raw), expected=expected, resource=resource)]
    return []


def assess(policy: WatchPolicy, prev: Snapshot | None, cur: Snapshot, conditions: Sequence[Condition] = (),
           fatal_xids: Sequence[int] = (), allocatable: Mapping[str, str] | None = None,
           expected_gpus: int | None = None, expected_resources: Mapping[str, int] | None = None) -> list[Signal]:
    """The signals of one look, critical ones first. ``allocatable`` and ``expected_gpus``
    (the node's and NetBox's): compared when given; a MIG or time-sliced pool's node is
    compared on ``expected_resources`` (each resource its pool's mode hands out) instead."""
    out = [_sig(policy, "check_unreadable", f"check {name} did not answer ({why})", check=name)
           for name, why in sorted(cur.unreadable.items())]
    if expected_resources:
        # a MIG or time-sliced pool's node hands out its pool's resources, not whole GPUs
        for resource, count in sorted(expected_resources.items()):
            out += allocatable_signals(policy, allocatable, count, resource)
    elif expected_gpus is not None:
        out += allocatable_signals(policy, allocatable, expected_gpus)
    out += _gpu_signals(policy, prev, cur) + _xid_signals(policy, prev, cur, set(fatal_xids))
    out += _ib_signals(policy, prev, cur) + condition_signals(policy, conditions)
    return sorted(out, key=lambda s: s.severity != "critical")


def critical(signals: Sequence[Signal]) -> list[Signal]:
    return [s for s in signals if s.severity == "critical"]
