"""The bring-up stages, one function per step, each for one node.

Every function takes a :class:`Context` (the connections, built from settings) and a
node name, reads what it needs from NetBox, does its one step through the adapters,
records the result in NetBox and returns an :class:`~bringup.lifecycle.Outcome`.
A step that finds the node unfit quarantines it (NetBox status ``failed``, the reason
in a custom field and a journal entry; cordoned and tainted if it is in the cluster)
and returns ``ok=False``. Transient trouble (timeouts, 5xx) raises, so the orchestrator
retries it; the node then stays at its last completed stage, never admitted.

Prefect is not imported here: the flows call these functions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import BringupError, ConfigError, NotFoundError
from .lifecycle import NodeReport, Outcome
from .netbox_adapter import NetBox, NodeRecord, connect, evidence_block, now_iso
from .settings import Settings, load_settings

QUARANTINE_TAG = "bringup-quarantine"
REBURNIN_TAG = "bringup-reburnin"


@dataclass
class Selected:
    name: str
    rack: str
    stage: str
    last_burnin: str = ""


class Context:
    """Connections and settings for the stages; cheap to build, lazy to connect."""

    def __init__(self, settings: Settings, netbox: NetBox | None = None) -> None:
        self.settings = settings
        self._netbox = netbox

    @classmethod
    def from_settings(cls, path: str | Path | None = None) -> "Context":
        return cls(load_settings(path))

    @property
    def netbox(self) -> NetBox:
        if self._netbox is None:
            self._netbox = NetBox(connect(self.settings.netbox_url, self.settings.netbox_token()))
        return self._netbox

    def node(self, name: str) -> NodeRecord:
        return self.netbox.nodes(names=[name])[0]

    # --- BMC ------------------------------------------------------------------------
    @cached_property
    def credentials(self):
        """``credentials_for(address)`` from the settings' BMC credentials file."""
        from .redfish import load_credentials
        if not self.settings.bmc_credentials_file:
            raise ConfigError("settings have no bmc_credentials_file")
        return load_credentials(self.settings.bmc_credentials_file)

    def bmc(self, address: str, timeout: float = 10.0):
        from .redfish import connect as redfish_connect
        s = self.settings
        return redfish_connect(address, self.credentials(address), port=s.bmc_port,
                               ca_bundle=str(s.bmc_ca_bundle) if s.bmc_ca_bundle else None,
                               insecure=s.bmc_insecure, timeout=timeout)

    # --- nodes over SSH -----------------------------------------------------------------
    def ssh_access(self):
        from .ansible import SshAccess
        return SshAccess.from_settings(self.settings)

    def host(self, rec: NodeRecord) -> dict[str, dict[str, Any]]:
        return {rec.name: {"address": rec.address, "port": self.settings.ssh_port}}

    # --- Kubernetes -----------------------------------------------------------------------
    @cached_property
    def kube(self):
        from .kube import KubeAdapter
        if not self.settings.kubeconfig:
            raise ConfigError("settings have no kubeconfig")
        return KubeAdapter.from_kubeconfig(self.settings.kubeconfig)

    # --- evidence -------------------------------------------------------------------------
    def evidence(self, node: str) -> Path:
        base = self.settings.evidence_dir or Path.home() / ".local/share/bringup/evidence"
        path = Path(base) / node
        path.mkdir(parents=True, exist_ok=True)
        return path


# --- helpers ---------------------------------------------------------------------------------
def _outcome(rec: NodeRecord, stage: str, ok: bool, summary: str, reasons=(), **kw) -> Outcome:
    return Outcome(node=rec.name, stage=stage, ok=ok, summary=summary, reasons=list(reasons), **kw)


def quarantine(ctx: Context, rec: NodeRecord, stage: str, reasons: list[str], evidence: Any = None) -> Outcome:
    """Take a node out of the pipeline: NetBox says why, the cluster keeps it cordoned."""
    reason_text = "; ".join(reasons) or f"{stage} failed"
    cluster = "not in the cluster"
    try:
        res = ctx.kube.quarantine(rec.name, reason_text)
        cluster = getattr(res, "summary", None) or str(res)
    except BringupError as exc:
        # NetBox still records the quarantine even if the cluster cannot be reached
        cluster = f"could not cordon in Kubernetes: {exc}"
    ctx.netbox.update_node(rec.id, status="failed", stage="quarantined",
                           fields={"bringup_reason": reason_text}, add_tags=[QUARANTINE_TAG])
    body = f"## Quarantined at stage {stage}\n\n" + "\n".join(f"- {r}" for r in reasons) + f"\n\nKubernetes: {cluster}\n"
    if evidence is not None:
        body += "\n" + evidence_block("evidence", evidence)
    ctx.netbox.journal(rec.id, body, kind="danger")
    return _outcome(rec, stage, False, f"quarantined: {reason_text}", reasons)


def _save(ctx: Context, node: str, name: str, data: Any) -> Path:
    path = ctx.evidence(node) / name
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str))
    return path


def _load(ctx: Context, node: str, name: str) -> Any:
    path = ctx.evidence(node) / name
    if not path.exists():
        raise NotFoundError(f"{node}: no {name} in the evidence store ({path})",
                            hint="the earlier stage did not finish; rerun with force to redo it")
    return json.loads(path.read_text())


def _dump(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "__dataclass_fields__"):
        from dataclasses import asdict
        return asdict(obj)
    return obj


# --- selection ---------------------------------------------------------------------------------
def _default_site(ctx: Context, site, rack, tag, names):
    """With no selection at all, the settings' site is meant."""
    return site or (None if (rack or tag or names) else ctx.settings.site or None)


def select(ctx: Context, *, site=None, rack=None, tag=None, names=None, status=None) -> list[Selected]:
    site = _default_site(ctx, site, rack, tag, names)
    if not any((site, rack, tag, names)):
        raise ConfigError("select nodes by site, rack, tag or names", hint="e.g. site=lab-east")
    return [Selected(r.name, r.rack, r.stage, str(r.custom_fields.get("burnin_last") or ""))
            for r in ctx.netbox.nodes(site=site, rack=rack, tag=tag, names=names, status=status)]


def due_for_reburnin(ctx: Context, *, site=None, rack=None, tag=None, names=None,
                     max_age_days: int = 30, now: datetime | None = None) -> list[Selected]:
    """Admitted nodes whose last burn-in is older than ``max_age_days`` or that carry the
    re-burn-in tag. Quarantined nodes are not picked: they wait for an operator."""
    now = now or datetime.now(UTC)
    out = []
    for rec in ctx.netbox.nodes(site=_default_site(ctx, site, rack, tag, names), rack=rack, tag=tag, names=names):
        if rec.stage != "admitted":
            continue
        last = rec.custom_fields.get("burnin_last")
        stale = True
        if last:
            try:
                stale = now - datetime.fromisoformat(str(last).replace("Z", "+00:00")) > timedelta(days=max_age_days)
            except ValueError:
                stale = True  # unparseable date: burn in again rather than trust it
        if stale or REBURNIN_TAG in rec.tags:
            out.append(Selected(rec.name, rec.rack, rec.stage, str(last or "")))
    return out


# --- discover ------------------------------------------------------------------------------------
def discover(ctx: Context, name: str) -> Outcome:
    """Inventory the BMC and verify it against NetBox; critical findings quarantine."""
    from .discovery import discover_one
    from .errors import TransientError
    from .verify import ExpectedNode

    rec = ctx.node(name)
    if not rec.bmc_address:
        return quarantine(ctx, rec, "discovered", ["NetBox has no BMC (OOB) IP for this device"])
    expected = ExpectedNode(name=rec.name, sku=rec.sku, macs=rec.macs, bmc_address=rec.bmc_address,
                            serial=rec.serial or None)
    s = ctx.settings
    d = discover_one(expected, ctx.credentials, port=s.bmc_port,
                     ca_bundle=str(s.bmc_ca_bundle) if s.bmc_ca_bundle else None, insecure=s.bmc_insecure)
    if d.error_kind in ("timeout", "redfish") and d.inventory is None:
        # maybe a busy BMC: let the orchestrator retry; after the retries the node stays planned
        err = TransientError(f"{name}: BMC {rec.bmc_address} could not be read: {d.error}")
        err.system = "Redfish"
        raise err
    evidence = d.to_dict()
    _save(ctx, name, "discovery.json", evidence)
    critical = [f for f in d.findings if f.severity == "critical"]
    figures = {"gpus": len(d.inventory.gpus) if d.inventory else 0, "findings": len(d.findings)}
    if critical:
        return quarantine(ctx, rec, "discovered", [f"{f.code}: {f.message}" for f in critical],
                          evidence={"findings": [f.model_dump() for f in d.findings]})
    serials = [g.serial for g in d.inventory.gpus] if d.inventory else []
    ctx.netbox.update_node(rec.id, stage="discovered", fields={"gpu_serials": serials})
    kind = "success" if not d.findings or all(f.severity == "info" for f in d.findings) else "warning"
    ctx.netbox.journal(rec.id, d.to_markdown() + "\n" + evidence_block("discovery", {
        "findings": [f.model_dump() for f in d.findings], "gpu_serials": serials}), kind=kind)
    warnings = [f"{f.code}: {f.message}" for f in d.findings if f.severity == "warning"]
    return _outcome(rec, "discovered", True, f"{len(serials)} GPUs, {len(warnings)} warnings", warnings,
                    figures=figures)


# --- provision -----------------------------------------------------------------------------------
def apply_bios(ctx: Context, name: str) -> Outcome:
    """Apply the SKU's BIOS profile and prove every attribute took after the reboot."""
    from .errors import RedfishError
    from .provision import apply_bios_profile

    rec = ctx.node(name)
    try:
        with ctx.bmc(rec.bmc_address, timeout=30.0) as bmc:
            result = apply_bios_profile(bmc, rec.sku.bios)
    except RedfishError as exc:
        result = getattr(exc, "result", None)
        if result is None or getattr(exc, "transient", False):
            raise
    if not result.ok:
        reasons = [f"BIOS {attr} did not take: wanted {want!r}, BIOS reads {got!r}"
                   for attr, (want, got) in result.not_applied.items()]
        return quarantine(ctx, rec, "provisioned", reasons, evidence=_dump(result))
    ctx.netbox.update_node(rec.id, fields={"bios_profile": rec.sku.bios_profile})
    return _outcome(rec, "bios", True, f"BIOS profile {rec.sku.bios_profile} applied and read back")


def _manifest(rec: NodeRecord):
    from .image import load_manifest
    return load_manifest(rec.sku.image)


def install_os(ctx: Context, name: str, ssh_timeout: float = 300.0) -> Outcome:
    """Install the SKU's image over virtual media and wait for SSH with the pinned host key.

    Re-installing wipes a node, so it is never repeated blindly: if NetBox already
    records this image and the node answers SSH with the expected host key, the install
    is skipped (a rerun after a crash between the install and the next stage)."""
    from functools import partial

    from .provision import install_os as do_install
    from .ssh import expected_host_key, wait_for_ssh

    rec = ctx.node(name)
    manifest = _manifest(rec)
    port = ctx.settings.ssh_port
    key = expected_host_key(Path(ctx.settings.ssh_known_hosts), rec.address, port)
    if _already_installed(ctx, rec, key):
        return _outcome(rec, "install", True, f"{manifest.name} already on the node; not reinstalled")
    media_url = ctx.settings.media_url.format(name=manifest.name) if ctx.settings.media_url else manifest.iso.url
    ctx.netbox.journal(rec.id, f"OS install of {manifest.name} started from {media_url}", kind="info")
    try:
        with ctx.bmc(rec.bmc_address, timeout=30.0) as bmc:
            do_install(bmc, manifest, media_url,
                       wait=partial(wait_for_ssh, rec.address, port, key, ssh_timeout, node=name))
    except BringupError as exc:
        if getattr(exc, "transient", False):
            raise
        return quarantine(ctx, rec, "provisioned", [f"node did not come back after the OS install: {exc}"])
    ctx.netbox.update_node(rec.id, fields={"image_id": manifest.name})
    return _outcome(rec, "install", True, f"{manifest.name} installed; SSH answers with the pinned host key")


def _already_installed(ctx: Context, rec: NodeRecord, key: str) -> bool:
    from .ssh import wait_for_ssh
    if rec.custom_fields.get("image_id") != rec.sku.image:
        return False
    try:
        wait_for_ssh(rec.address, ctx.settings.ssh_port, key, 3.0, node=rec.name)
    except BringupError:
        return False
    return True


def configure(ctx: Context, name: str) -> Outcome:
    """Pin and verify driver / CUDA / NCCL exactly as the manifest says; configure the node."""
    from .provision import configure as run_configure

    rec = ctx.node(name)
    manifest = _manifest(rec)
    step = run_configure(ctx.host(rec), manifest, ctx.ssh_access())[name]
    if not step.ok:
        return quarantine(ctx, rec, "provisioned", [step.reason or "configuration failed"])
    p = manifest.packages
    ctx.netbox.update_node(rec.id, stage="provisioned", status="staged", fields={
        "image_id": manifest.name, "driver_version": p.driver, "cuda_version": p.cuda, "nccl_version": p.nccl})
    ctx.netbox.journal(rec.id, f"Provisioned with {manifest.name}: driver {p.driver}, CUDA {p.cuda}, "
                               f"NCCL {p.nccl} pinned and verified", kind="success")
    return _outcome(rec, "provisioned", True, f"driver {p.driver}, CUDA {p.cuda}, NCCL {p.nccl} verified",
                    figures={"driver": p.driver})


# --- burn-in, judge, record -------------------------------------------------------------------
def burn_in(ctx: Context, name: str, profile: str = "quick") -> Outcome:
    """Run the agent on the node and keep its JSON document as evidence."""
    from .burnin_plan import make_plan
    from .burnin_thresholds import thresholds_for
    from .provision import run_burnin

    rec = ctx.node(name)
    m = _manifest(rec)
    versions = {"driver": m.packages.driver, "cuda": m.packages.cuda, "nccl": m.packages.nccl, "kernel": m.os.kernel}
    plan = make_plan(rec.sku, thresholds_for(rec.sku), versions, profile=profile, node=name)
    _save(ctx, name, "plan.json", plan)
    try:
        run = run_burnin(name, ctx.host(rec)[name], plan, ctx.ssh_access())
    except BringupError as exc:
        if getattr(exc, "transient", False):
            raise
        return quarantine(ctx, rec, "burned_in", [f"burn-in did not complete: {exc}"])
    _save(ctx, name, "burnin.json", run.document)
    ctx.netbox.update_node(rec.id, stage="burned_in")
    return _outcome(rec, "burned_in", True, f"burn-in document collected (agent exit {run.rc})")


def judge(ctx: Context, name: str) -> Outcome:
    """Pure policy over the stored document; an unparseable document is incomplete."""
    from .burnin_result import parse_result
    from .burnin_thresholds import thresholds_for
    from .judge import judge as judge_result

    rec = ctx.node(name)
    raw = _load(ctx, name, "burnin.json")
    try:
        result = parse_result(raw, source=f"{name} burn-in")
        verdict = judge_result(result, thresholds_for(rec.sku))
        verdict_doc = verdict.model_dump(mode="json")
    except BringupError as exc:
        verdict_doc = {"status": "incomplete", "reasons": [{"check": "document", "code": "unparseable",
                                                            "message": str(exc), "remediation": "rerun the burn-in"}]}
    verdict_doc["figures"] = _figures(raw)
    _save(ctx, name, "verdict.json", verdict_doc)
    ctx.netbox.update_node(rec.id, stage="judged")
    reasons = [r["message"] for r in verdict_doc.get("reasons", [])]
    return _outcome(rec, "judged", True, f"verdict {verdict_doc['status']}", reasons, figures=verdict_doc["figures"])


def _figures(raw: Any) -> dict[str, Any]:
    """Key figures for the fleet table, read defensively from the agent's document."""
    from .burnin_result import parse_result
    out: dict[str, Any] = {}
    try:
        result = parse_result(raw)
    except BringupError:
        return out
    for key, check, metric in (("gpus", "inventory", "gpu_count"), ("busbw_gbps", "nccl", "busbw_largest_gbps"),
                               ("max_temp_c", "clocks", "max_temp_c")):
        try:
            v = result.metric(check, metric)
        except Exception:  # a figure the agent could not measure is simply not shown
            v = None
        if v is not None:
            out[key] = v
    versions = result.check("versions")
    driver = ((getattr(versions, "data", None) or {}).get("installed") or {}).get("driver") if versions else None
    if driver:
        out["driver"] = driver
    return out


def record(ctx: Context, name: str) -> Outcome:
    """Write the verdict to NetBox: burn-in status, time, summary and the evidence."""
    rec = ctx.node(name)
    verdict = _load(ctx, name, "verdict.json")
    raw = _load(ctx, name, "burnin.json")
    status = verdict["status"]
    reasons = verdict.get("reasons", [])
    summary = f"{status}: " + ("; ".join(r["message"] for r in reasons) if reasons else "all checks passed")
    ctx.netbox.update_node(rec.id, stage="recorded", fields={
        "burnin_status": status, "burnin_last": now_iso(), "burnin_summary": summary[:4000]})
    lines = [f"## Burn-in: {status.upper()}", ""]
    lines += [f"- **{r['check']}** {r['message']} — *{r.get('remediation', '')}*" for r in reasons] or ["- all checks passed"]
    body = "\n".join(lines) + "\n\n" + evidence_block("figures", verdict.get("figures", {})) + "\n" + \
        evidence_block("burn-in document", raw)
    ctx.netbox.journal(rec.id, body, kind="success" if status == "pass" else "danger")
    return _outcome(rec, "recorded", True, summary)


# --- admission ------------------------------------------------------------------------------------
def admit(ctx: Context, name: str, ready_timeout: float = 120.0) -> Outcome:
    """Join and label a node whose recorded burn-in passed; quarantine it otherwise.

    The verdict is read back from NetBox, never assumed: anything but ``pass`` (fail,
    incomplete, missing) keeps the node out."""
    from .ansible import run_playbook
    from .fleet import Pool
    from .labels import node_labels

    rec = ctx.node(name)
    status = rec.custom_fields.get("burnin_status")
    if status == "pass" and not rec.custom_fields.get("burnin_last"):
        status = "pass without a burn-in time (record incomplete)"
    if status != "pass":
        verdict = {}
        try:
            verdict = _load(ctx, name, "verdict.json")
        except NotFoundError:
            pass
        reasons = [r["message"] for r in verdict.get("reasons", [])] or [f"burn-in status is {status or 'missing'}"]
        return quarantine(ctx, rec, "admitted", reasons)
    kube = ctx.kube
    state = kube.node_state(name)
    if not state.exists:
        join = kube.join_command()
        res = run_playbook("kubeadm-join.yml", ctx.host(rec), {
            "kube_endpoint": join.endpoint, "kube_token": join.token, "kube_ca_cert_hash": join.ca_cert_hash,
            "kube_node_name": name}, ctx.ssh_access(), timeout=300)
        if not res.ok:
            return quarantine(ctx, rec, "admitted", [f"kubeadm join failed: {h.reason}" for h in res.failed.values()])
    kube.wait_node_ready(name, timeout=ready_timeout)
    pool = dict(rec.pool)
    pool_name = pool.pop("name", "default")
    labels = node_labels(rec.sku, Pool(**pool), {}, {"status": "pass", "date": rec.custom_fields.get("burnin_last")},
                         pool_name=pool_name)
    kube.admit(name, labels, annotations={"bringup.io/netbox": rec.url})
    ctx.netbox.update_node(rec.id, status="active", stage="admitted", fields={"bringup_reason": ""},
                           remove_tags=[QUARANTINE_TAG, REBURNIN_TAG])
    ctx.netbox.journal(rec.id, "Admitted to Kubernetes with labels:\n\n" +
                       "\n".join(f"- `{k}={v}`" for k, v in sorted(labels.items())), kind="success")
    return _outcome(rec, "admitted", True, "joined, labelled and schedulable", figures={"labels": len(labels)})


def cordon_and_drain(ctx: Context, name: str, timeout: float = 300.0) -> Outcome:
    """Before a re-burn-in: cordon the node and evict its pods (PDBs honoured)."""
    rec = ctx.node(name)
    res = ctx.kube.drain(name, timeout=timeout)
    ctx.netbox.update_node(rec.id, stage="provisioned", status="staged")
    ctx.netbox.journal(rec.id, f"Cordoned and drained for re-burn-in: {getattr(res, 'summary', res)}", kind="info")
    return _outcome(rec, "drained", True, "cordoned and drained")


def report(ctx: Context, name: str) -> NodeReport:
    """The node's end state for the fleet table, read back from NetBox and the cluster."""
    rec = ctx.node(name)
    verdict_doc: dict[str, Any] = {}
    try:
        verdict_doc = _load(ctx, name, "verdict.json")
    except NotFoundError:
        pass
    labels: dict[str, str] = {}
    if rec.stage == "admitted":
        try:
            labels = dict(ctx.kube.node_state(name).labels)
        except BringupError:
            labels = {}
    verdict = {"admitted": "admitted", "quarantined": "quarantined"}.get(rec.stage, "pending")
    reasons = [r for r in str(rec.custom_fields.get("bringup_reason") or "").split("; ") if r] \
        if verdict == "quarantined" else []
    return NodeReport(node=name, rack=rec.rack, verdict=verdict, stage=rec.stage, reasons=reasons,
                      figures=verdict_doc.get("figures", {}), labels=labels, netbox_url=rec.url)
