"""Step ``fabric`` (state fabric), and the pool's fabric test it records.

The fabric test is pool-level: a flow runs :func:`pool_test` once for every node waiting
in ``fabric`` (grouped by site and pool; the pool's active nodes serve as known-good
partners) and hands each node its own result document as ``params["fabric"]``. The step
only turns that document into a :class:`StepResult`: pass (validating next; a bad link it
shares with a partner is kept in its evidence and journal), fail (quarantined, the reasons
naming the node, its partners, rails, HCA and port, or GPU and NIC). An ``unknown``
document is never a pass: the flow holds the node in ``fabric`` with the reasons instead
of recording it (:func:`held_reason`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bringup.context import Context
from bringup.errors import ConfigError
from bringup.fabric.models import best_busbw
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord

#: the stages whose nodes passed their fabric test: partners the pool's test trusts
KNOWN_GOOD_STAGES = ("active",)


def fabric(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    doc = params.get("fabric")
    if not isinstance(doc, dict) or doc.get("verdict") not in ("pass", "fail"):
        raise ConfigError(f"{rec.name}: the fabric step records the pool's fabric test and was given "
                          f"{'no result' if not isinstance(doc, dict) else 'an undecided result'}",
                          hint="run it through a flow that walks nodes into the fabric state (commission)")
    return result_of(rec.name, doc)


def _summary(doc: Mapping[str, Any]) -> str:
    """The journal text of a node's document: verdict, reasons, links, blamed, pairs."""
    verdict = str(doc.get("verdict") or "unknown")
    reasons = [str(r) for r in doc.get("reasons") or []]
    links = [str(link.get("message")) for link in doc.get("links") or []]
    pairs = doc.get("pairs") or []
    title = {"pass": "PASS", "fail": "FAIL"}.get(verdict, "UNDECIDED (held)")
    lines = [f"## Fabric test: {title}", ""]
    lines += [f"- **{r}**" for r in reasons]
    lines += [f"- link finding (not this node's fault alone): {m}" for m in links]
    blamed = doc.get("blamed") or []
    lines += [f"- blamed in this pool: {', '.join(blamed) if blamed else 'no node'}"]
    lines += [f"- pair {p['a']} - {p['b']}: {p['outcome']}"
              + (f", busbw {p['busbw_gbps']:.1f} GB/s" if isinstance(p.get("busbw_gbps"), (int, float)) else "")
              + (f" ({p['detail'][:200]})" if p.get("detail") else "") for p in pairs]
    return "\n".join(lines)


def result_of(node: str, doc: Mapping[str, Any]) -> StepResult:
    """The step's result for one node's document (pure)."""
    ok = doc.get("verdict") == "pass"
    reasons = [str(r) for r in doc.get("reasons") or []]
    links = [str(link.get("message")) for link in doc.get("links") or []]
    summary = "fabric test passed" if ok else "fabric test failed"
    if ok and links:
        summary += f"; {len(links)} bad link(s) with partners recorded"
    best = best_busbw(doc)
    return StepResult(node=node, step="fabric", ok=ok, summary=summary,
                      reasons=reasons if not ok else [],
                      figures={"fabric_busbw_gbps": best} if best is not None else {},
                      evidence=[Evidence(kind="fabric", document=dict(doc), summary=_summary(doc),
                                         style="danger" if not ok else "warning" if links else "success")])


def held_evidence(doc: Mapping[str, Any]) -> Evidence:
    """An undecided node's document, kept as its fabric evidence while it is held."""
    return Evidence(kind="fabric", document=dict(doc), summary=_summary(doc), style="warning")


def held_reason(doc: Mapping[str, Any]) -> str:
    """Why an undecided node is held in ``fabric`` (its document's reasons)."""
    reasons = [str(r) for r in doc.get("reasons") or []] or ["the fabric test gave no verdict"]
    return "fabric test undecided: " + "; ".join(reasons)


def pool_key(rec: NodeRecord) -> tuple[str, str]:
    return rec.site or "", str((rec.pool or {}).get("name") or "default")


def pool_test(ctx: Context, names: list[str], *, mode: str = "rack",
              end: str = "8G") -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Run the fabric test of every pool the named nodes are in; returns each named node's
    document and the pair matrix rows of all pools. Active nodes of the same site and pool
    are the known-good partners."""
    from bringup.fabric.mpirun import NodeSsh
    from bringup.fabric.policy import load_fabric_thresholds
    from bringup.fabric.pooltest import Member, PoolTest
    from bringup.fabric.verdicts import matrix_rows, node_documents

    s = ctx.settings
    ssh = ctx.ssh()
    access = ssh.access
    node_ssh = NodeSsh(s.fabric_key_file or str(access.key_file), s.fabric_known_hosts or str(access.known_hosts),
                       port=s.ssh_port)
    recs = ctx.netbox.nodes(names=names) if names else []
    pools: dict[tuple[str, str], list[NodeRecord]] = {}
    for r in recs:
        pools.setdefault(pool_key(r), []).append(r)
    docs: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for (site, pool), members in sorted(pools.items()):
        wanted = {r.name for r in members}
        good = [r for r in ctx.netbox.nodes(site=site or None) if r.name not in wanted
                and r.stage in KNOWN_GOOD_STAGES and pool_key(r) == (site, pool)]

        def member(r: NodeRecord, candidate: bool) -> Member:
            return Member(name=r.name, rack=r.rack, target=ctx.target(r),
                          address=r.address, gpus=r.sku.gpu.count, thresholds=load_fabric_thresholds(r.sku.sku),
                          expected=r.sku.gpu_nic_map, candidate=candidate)

        ms = [member(r, True) for r in members] + [member(r, False) for r in good]
        test = PoolTest(ssh, node_ssh, ms, mode=mode, end=end,  # type: ignore[arg-type]
                        nccl_timeout=s.fabric_nccl_timeout_s, allow_run_as_root=s.ssh_user == "root")
        run = test.run()
        docs.update(node_documents(run, ms))
        rows += matrix_rows(run, f"{site}/{pool}")
    return docs, rows
