"""Step ``judge`` (state burned_in): the stored burn-in document, judged against the
SKU's thresholds, and the verdict recorded (status, time, summary, reasons, figures).
Pure policy over evidence read back from NetBox: any worker can run it.

The judge also gets what NetBox knows from before: the GPU serials the BMC reported at
discovery (custom field ``gpu_serials``), compared with NVML's, and the lifetime ECC counts
of the previous verdict, for the trend."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..context import Context
from ..errors import BringupError, NetBoxNotFound, ParseError
from ..netbox_adapter import NodeRecord, now_iso
from ..results import Evidence, StepResult


def figures_of(raw: Any) -> dict[str, Any]:
    """Key figures for the fleet table, read defensively from the agent's document."""
    from ..burnin_result import parse_result
    out: dict[str, Any] = {}
    try:
        result = parse_result(raw)
    except BringupError:
        return out
    for key, check, metric in (("gpus", "inventory", "gpu_count"), ("busbw_gbps", "nccl", "busbw_largest_gbps"),
                               ("max_temp_c", "clocks", "max_temp_c"),
                               ("ecc_unc_lifetime", "ecc", "uncorrected_aggregate")):
        v = result.metric(check, metric)
        if v is not None:
            out[key] = v
    versions = result.check("versions")
    driver = ((getattr(versions, "data", None) or {}).get("installed") or {}).get("driver") if versions else None
    if driver:
        out["driver"] = driver
    return out


def verdict_of(name: str, rec: NodeRecord, stored: Any, previous: Any = None) -> dict[str, Any]:
    """The verdict document for a stored burn-in record; a document that cannot be read
    is an ``incomplete`` verdict naming the parse error, never a pass. ``previous`` is the
    node's previous verdict document, if any (for the ECC trend)."""
    from ..burnin_result import parse_result
    from ..burnin_thresholds import thresholds_for
    from ..judge import ecc_aggregate
    from ..judge import judge as judge_result

    raw = stored.get("document") if isinstance(stored, dict) and "document" in stored else stored
    serials = rec.custom_fields.get("gpu_serials")
    prev_ecc = previous.get("ecc_aggregate") if isinstance(previous, dict) else None
    try:
        result = parse_result(raw, source=f"{name} burn-in document")
        verdict = judge_result(result, thresholds_for(rec.sku),
                               bmc_serials=[str(s) for s in serials] if isinstance(serials, list) else None,
                               previous_ecc=prev_ecc if isinstance(prev_ecc, dict) else None).model_dump(mode="json")
        verdict["ecc_aggregate"] = ecc_aggregate(result)
    except BringupError as exc:
        verdict = {"status": "incomplete", "reasons": [{
            "check": "document", "code": "unparseable", "blocking": "incomplete",
            "message": f"the burn-in document cannot be judged: {exc}",
            "remediation": "burn in again (bringup commission --force); the stored document is kept as evidence"}]}
    verdict["figures"] = figures_of(raw)
    return verdict


def judge(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    stored = ctx.evidence.get(rec.name, rec.custom_fields, "burnin")
    try:
        previous = ctx.evidence.get(rec.name, rec.custom_fields, "verdict")
    except (NetBoxNotFound, ParseError):
        previous = None  # the first burn-in of this node (or an unreadable verdict): no trend
    verdict = verdict_of(rec.name, rec, stored, previous)
    status = verdict["status"]
    reasons = verdict.get("reasons", [])
    summary = f"{status}: " + ("; ".join(r["message"] for r in reasons) if reasons else "all checks passed")
    lines = [f"## Burn-in verdict: {status.upper()}", ""]
    lines += [f"- **{r['check']}** {r['message']} — *{r.get('remediation', '')}*" for r in reasons] \
        or ["- all checks passed"]
    lines += [f"- note ({n['check']}): {n['message']}" for n in verdict.get("notes", [])]
    return StepResult(
        node=rec.name, step="judge", ok=status == "pass", summary=f"verdict {status}",
        reasons=[r["message"] for r in reasons], figures=verdict["figures"],
        fields={"burnin_status": status, "burnin_last": now_iso(), "burnin_summary": summary[:4000]},
        evidence=[Evidence(kind="verdict", document=verdict, summary="\n".join(lines),
                           style="success" if status == "pass" else "danger")])
