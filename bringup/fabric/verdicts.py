"""From what a pool's fabric test saw to one result document per node (pure).

A node's verdict:

- ``fail`` when the localiser blamed it (two known-good partners failed with it: the
  message names the partners and the rails), a port of its flapped (counter growth beyond
  ``fabric.yaml``, naming HCA and port), or its topology is wrong (GPU and NIC named);
- ``unknown`` when any of those could not be decided: a pair that gave no result, too few
  good partners, no partner at all, a counter or topology that could not be read. Never a
  pass: the node is held in the fabric state with the reasons;
- ``pass`` otherwise. A node that only shares a bad link passes; the link finding is in
  both nodes' documents (``links``), for the journal and the NetBox evidence.
"""

from __future__ import annotations

from typing import Any

from bringup.fabric.counters import counter_growth
from bringup.fabric.models import FabricFinding
from bringup.fabric.pooltest import Member, PoolRun
from bringup.fabric.topology import check_topology


def _finding(f: FabricFinding) -> dict[str, Any]:
    return {"kind": f.kind, "nodes": f.nodes, "rails": f.rails, "hca": f.hca, "port": f.port,
            "message": f.message}


def node_documents(run: PoolRun, members: list[Member]) -> dict[str, dict[str, Any]]:
    """One document per candidate: ``verdict``, ``reasons`` (why not a pass), ``links``
    (link findings it is one end of), ``blamed`` (who the pool's test blamed), its pairs,
    topology findings and counter rows that did not pass."""
    loc = run.localiser
    findings = loc.findings() if run.pairs else []
    blamed = sorted({n for f in findings if f.kind == "node" for n in f.nodes})
    verdicts = loc.verdicts()
    out: dict[str, dict[str, Any]] = {}
    for m in members:
        if not m.candidate:
            continue
        fails: list[str] = []
        unknowns: list[str] = []
        mine = [f for f in findings if m.name in f.nodes]
        for f in mine:
            if f.kind == "node":
                fails.append(f.message)
            elif f.kind == "unknown":
                unknowns.append(f.message)
        links = [_finding(f) for f in mine if f.kind == "link"]
        pairs = [p for p in run.pairs if m.name in (p["a"], p["b"])]
        if not pairs:
            unknowns.append(next((n for n in run.notes if m.name in n and "no partner" in n),
                                 f"{m.name}: no pair test ran") if run.notes else f"{m.name}: no pair test ran")
        elif verdicts.get(m.name) == "unknown" and not any(f.kind == "unknown" and f.nodes == [m.name] for f in mine):
            unknowns.append(f"{m.name}: not cleared by any passing pair test")
        topo = run.topology.get(m.name)
        topology: dict[str, Any]
        if isinstance(topo, str) or topo is None:
            unknowns.append(f"{m.name}: topology not read ({topo or 'no output'})")
            topology = {"outcome": "unknown", "findings": []}
        else:
            tv = check_topology(topo, m.expected)
            topology = tv.model_dump(mode="json")
            for tf in tv.findings:
                (fails if tf.outcome == "fail" else unknowns).append(f"{m.name} topology: {tf.message}")
        counters: list[dict[str, Any]] = []
        before, after = run.before.get(m.name), run.after.get(m.name)
        if isinstance(before, dict) and isinstance(after, dict):
            rows, cfinds = counter_growth(m.name, before, after, m.thresholds.counters)
            counters = [r.model_dump() for r in rows if r.outcome != "pass"]
            for cf in cfinds:
                (fails if cf.kind == "flapping_link" else unknowns).append(
                    f"flapping link: {cf.message}" if cf.kind == "flapping_link" else cf.message)
        else:
            unknowns.append(f"{m.name}: IB port counters not read ({before if isinstance(before, str) else after})")
        verdict = "fail" if fails else "unknown" if unknowns else "pass"
        if verdict == "unknown":
            # what its own tests said, so an unknown is never only "not enough partners"
            unknowns += [f"pair {p['a']} - {p['b']} {p['outcome']}: {str(p['detail'])[:300]}"
                         for p in pairs if p["outcome"] != "pass" and p.get("detail")]
        out[m.name] = {
            "verdict": verdict, "reasons": fails + unknowns if verdict != "pass" else [],
            "links": links, "blamed": blamed, "mode": run.mode,
            "partners": sorted({p["b"] if p["a"] == m.name else p["a"] for p in pairs}),
            "pairs": pairs, "topology": topology, "counters": counters,
            "findings": [_finding(f) for f in mine],
        }
    return out


def matrix_rows(run: PoolRun, pool: str) -> list[dict[str, Any]]:
    """The pair matrix for the run's artifact: one row per pair test."""
    rows = []
    for p in run.pairs:
        failed = sorted(k for k, v in p.get("rails", {}).items() if v != "pass")
        rows.append({"pool": pool, "round": p.get("round", 1), "pair": f"{p['a']} - {p['b']}",
                     "outcome": p["outcome"], "nccl": p.get("nccl", ""),
                     "busbw GB/s": "" if p.get("busbw_gbps") is None else round(p["busbw_gbps"], 1),
                     "rails": f"{len(p.get('rails', {})) - len(failed)}/{len(p.get('rails', {}))} pass"
                     + (f" (not: {', '.join(failed)})" if failed else ""),
                     "detail": str(p.get("detail", ""))[:300]})
    return rows
