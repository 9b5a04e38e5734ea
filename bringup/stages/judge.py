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
    try:
        return _figures(result, out)
    except (AttributeError, TypeError, KeyError, ValueError):  # odd shapes the model lets through
        return out


def _figures(result: Any, out: dict[str, Any]) -> dict[str, Any]:
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
    source = f"{name} burn-in document"
    if isinstance(raw, dict) and isinstance(raw.get("unparsed"), str):  # the node's file was not JSON
        raw, source = raw["unparsed"], f"{name} burn-in document {raw.get('file') or ''}".rstrip()
    serials = rec.custom_fields.get("gpu_serials")
    prev_ecc = previous.get("ecc_aggregate") if isinstance(previous, dict) else None
    try:
        result = parse_result(raw, source=source)
        verdict = judge_result(result, thresholds_for(rec.sku),
                               bmc_serials=[str(s) for s in serials] if isinstance(serials, list) else None,
                               previous_ecc=prev_ecc if isinstance(prev_ecc, dict) else None).model_dump(mode="json")
        verdict["ecc_aggregate"] = ecc_aggregate(result)
    except (BringupError, AttributeError, TypeError, KeyError, ValueError) as exc:
        # a document of odd shape must not crash the judge on every rerun: an unknown, never a pass
        verdict = unjudged(f"the burn-in document cannot be judged: {exc}")
    verdict["figures"] = figures_of(raw)
    return verdict


def unjudged(message: str) -> dict[str, Any]:
    """The verdict of evidence that cannot be read: incomplete, with why."""
    return {"status": "incomplete", "reasons": [{
        "check": "document", "code": "unparseable", "blocking": "incomplete", "message": message,
        "remediation": "burn in again (bringup commission --force); the stored document is kept as evidence"}]}


def judge(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    try:
        previous = ctx.evidence.get(rec.name, rec.custom_fields, "verdict")
    except (NetBoxNotFound, ParseError):
        previous = None  # the first burn-in of this node (or an unreadable verdict): no trend
    try:
        stored = ctx.evidence.get(rec.name, rec.custom_fields, "burnin")
    except ParseError as exc:  # cut or altered in NetBox: the verdict says so (and no stale pass stays)
        verdict = {**unjudged(f"the stored burn-in evidence cannot be read: {exc}"), "figures": {}}
    else:
        verdict = verdict_of(rec.name, rec, stored, previous)
    status = verdict["status"]
    reasons = verdict.get("reasons", [])
    warnings = verdict.get("warnings", [])
    summary = f"{status}: " + ("; ".join(r["message"] for r in reasons) if reasons else "all checks passed")
    summary += "".join(f"; warning ({w['check']}): {w['message']}" for w in warnings)
    lines = [f"## Burn-in verdict: {status.upper()}", ""]
    lines += [f"- **{r['check']}** {r['message']} — *{r.get('remediation', '')}*" for r in reasons] \
        or ["- all checks passed"]
    lines += [f"- note ({n['check']}): {n['message']}" for n in verdict.get("notes", [])]
    lines += [f"- **warning** ({w['check']}): {w['message']}" for w in warnings]
    return StepResult(
        node=rec.name, step="judge", ok=status == "pass", summary=f"verdict {status}",
        reasons=[r["message"] for r in reasons], figures=verdict["figures"],
        fields={"burnin_status": status, "burnin_last": now_iso(), "burnin_summary": summary[:4000]},
        evidence=[Evidence(kind="verdict", document=verdict, summary="\n".join(lines),
                           style="danger" if status != "pass" else "warning" if warnings else "success")])
