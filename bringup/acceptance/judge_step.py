"""Step ``judge`` (state burned_in): the stored burn-in document, judged against the
SKU's thresholds, and the verdict recorded (status, time, summary, reasons, figures).
Pure policy over evidence read back from NetBox: any worker can run it.

The judge also gets what NetBox knows from before: the GPU serials the BMC reported at
discovery (custom field ``gpu_serials``), compared with NVML's, the lifetime ECC counts
of the previous verdict, for the trend, and the figures of the node's last accepted burn-in
(carried from verdict to verdict as ``baseline``), and its peers: the stored burn-in documents
of the other nodes of its SKU at its site that are burned in, validating or active (so
nodes judged earlier in the same run count). :mod:`bringup.acceptance.peers` compares them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bringup.acceptance.digest import with_digest
from bringup.context import Context
from bringup.errors import BringupError, NetBoxNotFound, ParseError
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord, now_iso
from bringup.netbox.evidence import EvidenceStore


def figures_of(raw: Any) -> dict[str, Any]:
    """Key figures for the fleet table, read defensively from the agent's document."""
    from bringup.acceptance.result import parse_result
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


def _document(name: str, stored: Any) -> tuple[Any, str]:
    """The agent's document in a stored burn-in record, and where it came from."""
    raw = stored.get("document") if isinstance(stored, dict) and "document" in stored else stored
    source = f"{name} burn-in document"
    if isinstance(raw, dict) and isinstance(raw.get("unparsed"), str):  # the node's file was not JSON
        raw, source = raw["unparsed"], f"{name} burn-in document {raw.get('file') or ''}".rstrip()
    return raw, source


def _baseline_of(previous: Any) -> dict[str, Any] | None:
    base = previous.get("baseline") if isinstance(previous, dict) else None
    figures = base.get("figures") if isinstance(base, dict) else None
    return figures if isinstance(figures, dict) else None


def _kept_baseline(previous: Any) -> dict[str, Any] | None:
    """The last accepted burn-in's baseline, carried over a verdict that is not a pass."""
    base = previous.get("baseline") if isinstance(previous, dict) else None
    return base if _baseline_of(previous) is not None else None


def verdict_of(name: str, rec: NodeRecord, stored: Any, previous: Any = None,
               peers: Sequence[tuple[str, Any]] | None = None) -> dict[str, Any]:
    """The verdict document for a stored burn-in record; a document that cannot be read
    is an ``incomplete`` verdict naming the parse error, never a pass. ``previous`` is the
    node's previous verdict document, if any (for the ECC trend and the baseline); ``peers``
    the ``(name, document)`` of its peers (None: no peer comparison, e.g. a replay)."""
    from bringup.acceptance.judge import ecc_aggregate
    from bringup.acceptance.judge import judge as judge_result
    from bringup.acceptance.peers import figures as peer_figures
    from bringup.acceptance.result import parse_result
    from bringup.acceptance.thresholds import thresholds_for

    raw, source = _document(name, stored)
    serials = rec.custom_fields.get("gpu_serials")
    prev_ecc = previous.get("ecc_aggregate") if isinstance(previous, dict) else None
    baseline = _baseline_of(previous)
    if baseline is None and peers is not None:
        baseline = {}  # judged with its fleet: "no accepted burn-in on record" is reported
    try:
        result = parse_result(raw, source=source)
        thresholds = thresholds_for(rec.sku)
        verdict = judge_result(result, thresholds, peers,
                               bmc_serials=[str(s) for s in serials] if isinstance(serials, list) else None,
                               previous_ecc=prev_ecc if isinstance(prev_ecc, dict) else None,
                               baseline=baseline).model_dump(mode="json")
        verdict["ecc_aggregate"] = ecc_aggregate(result)
        # the baseline the next burn-in meets: this one once accepted, else the last accepted
        verdict["baseline"] = ({"figures": peer_figures(result, thresholds.peers), "at": result.finished}
                               if verdict["status"] == "pass" else _kept_baseline(previous))
    except (BringupError, AttributeError, TypeError, KeyError, ValueError) as exc:
        # a document of odd shape must not crash the judge on every rerun: an unknown, never a pass
        verdict = unjudged(f"the burn-in document cannot be judged: {exc}")
        verdict["baseline"] = _kept_baseline(previous)
    verdict["figures"] = figures_of(raw)
    return verdict


#: the stages whose nodes have a burn-in that stands (fabric: judged, waiting for the pool's test): the peers
PEER_STAGES = ("burned_in", "fabric", "validating", "active")


def peer_documents(ctx: Context, rec: NodeRecord, limit: int) -> list[tuple[str, Any]]:
    """The I/O of the peer comparison: the stored burn-in documents of the other nodes of
    ``rec``'s SKU at its site that are burned in, validating or active, the ``limit`` most
    recently burned in. Same site: same firmware rollout and the same air. Evidence that
    cannot be read is passed on as its error (the rule reports it); NetBox being down is
    raised (transient: the orchestrator retries)."""
    def burned_at(n: NodeRecord) -> str:
        ref = (EvidenceStore.index_of(n.custom_fields).get("docs") or {}).get("burnin")
        return str(ref.get("at") or "") if isinstance(ref, dict) else ""

    candidates = [n for n in ctx.netbox.nodes(site=rec.site or None)
                  if n.name != rec.name and n.sku.sku == rec.sku.sku and n.stage in PEER_STAGES
                  and EvidenceStore.index_of(n.custom_fields).get("docs", {}).get("burnin")]
    candidates.sort(key=burned_at, reverse=True)
    out: list[tuple[str, Any]] = []
    for n in candidates[:limit]:
        try:
            stored = ctx.evidence.get(n.name, n.custom_fields, "burnin")
        except NetBoxNotFound:
            continue
        except ParseError as exc:
            out.append((n.name, exc))
            continue
        out.append((n.name, _document(n.name, stored)[0]))
    return out


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
        from bringup.acceptance.thresholds import thresholds_for
        try:
            limit = thresholds_for(rec.sku).peers.max_peers
        except BringupError:
            limit = 0  # unknown SKU: verdict_of says so; no fleet read for nothing
        verdict = verdict_of(rec.name, rec, stored, previous, peers=peer_documents(ctx, rec, limit) if limit else [])
    status = verdict["status"]
    reasons = verdict.get("reasons", [])
    warnings = verdict.get("warnings", [])
    summary = f"{status}: " + ("; ".join(r["message"] for r in reasons) if reasons else "all checks passed")
    summary += "".join(f"; warning ({w['check']}): {w['message']}" for w in warnings)
    skipped = [n["message"] for n in verdict.get("notes", []) if n.get("code") == "peers_skipped"]
    summary += "".join(f"; {m}" for m in skipped)
    lines = [f"## Burn-in verdict: {status.upper()}", ""]
    lines += [f"- **{r['check']}** {r['message']} — *{r.get('remediation', '')}*" for r in reasons] \
        or ["- all checks passed"]
    lines += [f"- note ({n['check']}): {n['message']}" for n in verdict.get("notes", [])]
    lines += [f"- **warning** ({w['check']}): {w['message']}" for w in warnings]
    lines += [f"- {c['against']} {c['outcome']}: {c['message']}" for c in verdict.get("peer_checks", [])]
    return StepResult(
        node=rec.name, step="judge", ok=status == "pass", summary=f"verdict {status}",
        reasons=[r["message"] for r in reasons], figures=verdict["figures"],
        fields={"burnin_status": status, "burnin_last": now_iso(), "burnin_summary": summary[:4000]},
        evidence=[Evidence(kind="verdict", document=verdict, summary=with_digest("verdict", verdict, "\n".join(lines)),
                           style="danger" if status != "pass" else "warning" if warnings else "success")])
