"""The health watch's work on one active node: a look, compared with the last one, and
recorded (:mod:`bringup.service.health` decides what the differences mean).

A look runs the burn-in agent over SSH with the watch's short plan (no stress), reads
the node's Kubernetes conditions and its BMC (sensors, power supplies, leak detectors,
new SEL entries: :mod:`bringup.service.bmc_health`), and compares them with the snapshot
kept in NetBox (evidence kind ``health``). The BMC is read first and on its own: a leak
is news even when SSH is down, and a BMC that cannot be read is a ``bmc_unreadable``
warning, never health (the last look's SEL marker is then kept). NetBox is written only when something changed: a new
snapshot when the look differs from the last, and a journal entry for each look that
raised signals, so a quiet fleet costs reads, not journal entries, every ten minutes.
Acting on critical signals (the guard, cordon and drain) is the flow's, through the
lifecycle (:meth:`bringup.lifecycle.engine.Lifecycle.suspect`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bringup.context import Context
from bringup.errors import BringupError
from bringup.lifecycle.results import Evidence
from bringup.netbox.adapter import NodeRecord
from bringup.provision.configure_steps import manifest_of
from bringup.service.bmc_health import BmcLook, bmc_signals, unreadable
from bringup.service.gpu_scope import Scope
from bringup.service.health import Condition, Signal, Snapshot, WatchPolicy, assess, critical, snapshot

KIND = "health"


@dataclass
class Look:
    node: str
    signals: list[Signal] = field(default_factory=list)
    snapshot: Snapshot | None = None
    changed: bool = False
    agent_rc: int | None = None
    seconds: float = 0.0
    #: why the look could not be taken at all (SSH down, agent missing): a warning, never health
    error: str = ""
    #: the site's health owner when it is not bringup: the findings are recorded, never acted on
    deferred_to: str = ""
    #: which critical signals take one GPU out and which the node (None: not asked, every
    #: critical signal is the node's)
    scope: Scope | None = None
    #: each GPU's serial as NVML reads it, by index (the inventory check), for NetBox's record
    gpu_serials: dict[int, str] = field(default_factory=dict)

    @property
    def critical(self) -> list[Signal]:
        """The signals the node goes for (one GPU's fault takes the GPU only: ``gpus``)."""
        return list(self.scope.node) if self.scope is not None else critical(self.signals)

    @property
    def gpus(self):
        """The GPUs this look takes out of service while the node keeps serving."""
        return list(self.scope.gpus) if self.scope is not None else []

    @property
    def node_reasons(self) -> list[str]:
        """Why the node goes, as the lifecycle records it."""
        why = [self.scope.why_node] if self.scope is not None and self.scope.why_node else []
        return [s.message for s in self.critical] + why

    def evidence(self) -> Evidence:
        """The look as evidence (for the lifecycle's record when the node is acted on)."""
        crit = self.critical
        text = "\n".join(f"- **{s.severity}** {s.message}" for s in self.signals) or "- nothing new"
        if self.scope is not None and (self.scope.gpus or self.scope.why_node):
            text += "\n\n" + ("\n".join(f"- GPU {g.gpu} taken out of service, the node keeps serving: {g.message}"
                                       for g in self.scope.gpus) or f"- the node goes: {self.scope.why_node}")
        return Evidence(kind=KIND, document={"snapshot": self.snapshot.to_json() if self.snapshot else None,
                                             "signals": [asdict(s) for s in self.signals],
                                             "agent_rc": self.agent_rc,
                                             "gpus_out": [asdict(g) for g in self.gpus],
                                             "why_node": self.scope.why_node if self.scope else ""},
                        summary=f"## Health watch look\n\n{text}\n", style="danger" if crit else "warning")


def _plan(rec: NodeRecord, policy: WatchPolicy) -> dict[str, Any]:
    from bringup.acceptance.plan import make_plan
    from bringup.acceptance.thresholds import thresholds_for
    m = manifest_of(rec)
    versions = {"driver": m.packages.driver, "cuda": m.packages.cuda, "nccl": m.packages.nccl, "kernel": m.os.kernel}
    return make_plan(rec.sku, thresholds_for(rec.sku), versions, profile="quick", node=rec.name,
                     checks=list(policy.checks))


def conditions_of(ctx: Context, name: str) -> list[Condition]:
    from bringup.kube.conditions import node_conditions
    return [Condition(c.type, c.status, c.reason, c.message) for c in node_conditions(ctx.kube, name)]


def bmc_look(ctx: Context, rec: NodeRecord, policy: WatchPolicy, prev: BmcLook | None
             ) -> tuple[list[Signal], BmcLook | None]:
    """The BMC's signals and what the next look compares with. Not read where the policy
    has no ``bmc:`` section; a BMC that cannot be read keeps ``prev`` (its SEL marker)."""
    if policy.bmc is None:
        return [], prev
    address = str(getattr(rec, "bmc_address", "") or "")
    if not address:
        return [unreadable(policy, "NetBox gives the node no BMC address (its OOB IP)")], prev
    from bringup.redfish.health import read_health
    try:
        with ctx.bmc(address, timeout=policy.bmc.timeout_seconds) as bmc:
            reading = read_health(bmc)
    except BringupError as exc:
        return [unreadable(policy, f"{address} could not be read: {exc}", address=address)], prev
    return bmc_signals(policy, reading, prev)


def look(ctx: Context, rec: NodeRecord, policy: WatchPolicy, fatal_xids: list[int]) -> Look:
    """One look at ``rec``; recorded in NetBox when it changed anything."""
    from bringup.provision.ansible_steps import run_burnin

    started = time.monotonic()
    out = Look(node=rec.name)
    prev_doc = ctx.evidence.get(rec.name, rec.custom_fields, KIND) if ctx.evidence.has(rec.custom_fields, KIND) else None
    prev = Snapshot.from_json(prev_doc["snapshot"]) if prev_doc and prev_doc.get("snapshot") else None
    bmc_sigs, bmc_now = bmc_look(ctx, rec, policy, prev.bmc if prev else None)
    try:
        run = run_burnin(rec.name, ctx.host(rec)[rec.name], _plan(rec, policy), ctx.ssh_access())
        doc = run.document if isinstance(run.document, dict) else {}
        out.agent_rc = run.rc
        out.snapshot = snapshot(doc, wanted=policy.checks)
        conds = conditions_of(ctx, rec.name)
        allocatable = ctx.kube.node_state(rec.name).allocatable
    except BringupError as exc:
        out.error = str(exc)
        # no snapshot is kept: the BMC's SEL entries count again at the next look
        out.signals = critical(bmc_sigs) + [Signal("look_failed", "warning", f"the look could not be taken: {exc}")]
        out.signals += [s for s in bmc_sigs if s.severity != "critical"]
        out.seconds = time.monotonic() - started
        return out
    out.snapshot = replace(out.snapshot, bmc=bmc_now)
    shared = shared_resources(rec)
    found = assess(policy, prev, out.snapshot, conds, fatal_xids, allocatable=allocatable,
                   expected_gpus=rec.sku.gpu.count, expected_resources=shared)
    out.signals = sorted(found + bmc_sigs, key=lambda s: s.severity != "critical")
    out.changed = prev is None or prev != out.snapshot
    if out.signals and critical(out.signals):
        from bringup.service.gpu_quarantine import scope_of
        raw = str((allocatable or {}).get("nvidia.com/gpu", "")).strip()
        out.scope = scope_of(ctx, rec, out.signals, int(raw) if raw.isdigit() else None, shared=bool(shared))
        out.gpu_serials = serials_of(doc)
    if out.changed or out.signals:
        from bringup.netbox.records import NetBoxRecords
        records = NetBoxRecords(ctx)
        # the snapshot's index entry is a field of the node, written like the lifecycle's
        # (the flow holds the node's lease meanwhile); the stage is not touched
        records.write(rec, fields={"bringup_evidence": records.put_evidence(rec, [out.evidence()])})
        owner = getattr(ctx.settings, "health_owner", "bringup")
        if (out.critical or out.gpus) and owner != "bringup":
            out.deferred_to = owner
            records.journal(rec, deferral(owner, critical(out.signals)), kind="warning")
    out.seconds = time.monotonic() - started
    return out


def shared_resources(rec: NodeRecord) -> dict[str, int] | None:
    """What a MIG or time-sliced pool's node hands out (resource -> count, by the pool's mode,
    as the readiness gate expects); None for whole GPUs, or for a pool NetBox holds wrong
    (the share step holds such a node; the watch then compares whole GPUs, as before)."""
    from bringup.admission.share_step import pool_mode
    from bringup.admission.sharing import Exclusive, expected
    from bringup.errors import ConfigError, ParseError
    try:
        _, mode = pool_mode(rec)
    except (ConfigError, ParseError):
        return None
    return None if isinstance(mode, Exclusive) else dict(expected(mode, rec.sku).resources)


def serials_of(doc: dict[str, Any]) -> dict[int, str]:
    """GPU index -> serial from the agent's inventory check (what NVML says, in NVML's
    order: the BMC's list of serials is in another order); GPUs without one are left out."""
    checks = {c.get("name"): c for c in doc.get("checks") or [] if isinstance(c, dict)}
    out = {}
    for g in ((checks.get("inventory") or {}).get("data") or {}).get("gpus") or []:
        index, serial = g.get("index"), g.get("serial")
        if isinstance(index, int) and isinstance(serial, str) and serial.strip():
            out[index] = serial.strip()
    return out


def deferral(owner: str, signals: list[Signal]) -> str:
    """The journal entry of critical findings left to the site's health owner."""
    return (f"## Health watch: finding recorded, not acted on\n\nThe site's health owner is {owner} "
            "(settings: health_owner): bringup records this finding and does not cordon, taint or drain "
            "the node for it.\n\n" + "\n".join(f"- {s.message}" for s in signals) + "\n")


def taint_effect(ctx: Context, rec: NodeRecord) -> str:
    """The quarantine taint's effect for what ``rec`` was just taken out of service for:
    the class of its findings (the health look's critical signals when the health watch
    took it out, else the burn-in verdict's reasons) by ``healthwatch.yaml``'s
    ``taint_effects``. What cannot be read is NoSchedule, the cordon's own effect."""
    from bringup.service.blastradius import load_policy as guard_policy
    from bringup.service.guard import quarantine_codes
    from bringup.service.health import load_policy
    fields = getattr(rec, "custom_fields", None) or {}
    try:
        if str(fields.get("bringup_reason") or "").startswith("health watch:") and ctx.evidence.has(fields, KIND):
            doc = ctx.evidence.get(rec.name, fields, KIND)
            codes = [str(s.get("code")) for s in doc.get("signals") or [] if s.get("severity") == "critical"]
        else:
            codes = quarantine_codes(ctx, rec)
        return load_policy().effect(guard_policy().finding_classes.classify(codes))
    except BringupError:
        return "NoSchedule"
