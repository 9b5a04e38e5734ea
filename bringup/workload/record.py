"""A pool acceptance verdict in NetBox, and the pool's new nodes kept out of service when
it is not a pass.

- Per pool: a config context ``pool-<pool>-acceptance`` on the pool's tag, holding
  ``bringup_pool_acceptance`` (outcome, reasons, figures, run, time). Every node of the pool
  renders it in its own config context, so the UI and the report read it where they read
  the pool; the pool's own ``pool-<pool>`` context (``bringup_pool``) is left as it is.
- Per node that ran it: a journal entry with the figures.
- Not a pass: each new node is held by the lifecycle (its ``hold``: the reason in
  ``bringup_reason`` and the journal; the engine stays the one writer of the stage) and
  cordoned with the reason, so no workload lands on it until an acceptance passes.

Through the NetBox adapter's generic object calls (``get_object``, ``create_object``,
``update_object``, ``journal``); ``hold`` and ``cordon`` are handed in by the wiring.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from bringup.errors import BringupError
from bringup.workload.policy import Verdict

log = logging.getLogger(__name__)

CONTEXT_KEY = "bringup_pool_acceptance"
#: above the pool's own context (2000): the verdict is the latest word on the pool
WEIGHT = 2100
_KIND = {"pass": "success", "fail": "danger", "unknown": "warning"}
_UNITS = {"queue_wait_s": "s", "data_fetch_s": "s", "restore_s": "s", "busbw_gbps": "GB/s",
          "samples_per_s": "samples/s", "reference_samples_per_s": "samples/s"}


def context_name(pool: str) -> str:
    return f"pool-{pool}-acceptance"


def document(verdict: Verdict, run: str, at: str) -> dict[str, Any]:
    """What the pool's context holds: the verdict with its figures (JSON values)."""
    return {"outcome": verdict.outcome, "run": run, "at": at, "reasons": verdict.reasons,
            "unknown": verdict.unknown, "figures": verdict.figures, "nodes": verdict.nodes}


def figure_text(key: str, value: float | None) -> str:
    if value is None:
        return "unknown"
    if key in ("mfu", "throughput_ratio"):
        return f"{value:.1%}"
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return f"{text} {_UNITS.get(key, '')}".strip()


def journal_text(verdict: Verdict, run: str, node: str) -> str:
    """The journal entry of one node that ran the acceptance (Markdown, as NetBox shows it)."""
    lines = [f"## Pool acceptance {verdict.outcome.upper()}: pool {verdict.pool}", "",
             f"Run `{run}`; this node ran one of its workers.", ""]
    lines += [f"- {r}" for r in verdict.reasons] + [f"- unknown: {u}" for u in verdict.unknown]
    lines += ["", "| figure | value |", "|---|---|"]
    lines += [f"| {k} | {figure_text(k, v)} |" for k, v in verdict.figures.items()]
    return "\n".join(lines) + "\n"


def record_verdict(nb: Any, verdict: Verdict, run: str, at: str, node_ids: dict[str, int]) -> None:
    """The verdict on the pool (its acceptance config context) and a journal entry on each
    node that ran it (``node_ids``: name -> NetBox device id)."""
    name = context_name(verdict.pool)
    data = {CONTEXT_KEY: document(verdict, run, at)}
    cc = nb.get_object("extras.config_contexts", name=name)
    if cc is None:
        nb.create_object("extras.config_contexts", {
            "name": name, "weight": WEIGHT, "tags": [f"pool-{verdict.pool}"], "data": data,
            "description": f"bringup: pool {verdict.pool}'s latest acceptance"})
    else:
        nb.update_object("extras.config_contexts", cc["id"], {"data": data})
    for node in verdict.nodes:
        if node in node_ids:
            nb.journal(node_ids[node], journal_text(verdict, run, node), kind=_KIND[verdict.outcome])


def latest(nb: Any, pool: str) -> dict[str, Any] | None:
    """The pool's latest acceptance as NetBox holds it (None: never run)."""
    cc = nb.get_object("extras.config_contexts", name=context_name(pool))
    return ((cc or {}).get("data") or {}).get(CONTEXT_KEY)


def accepted_per_node(doc: dict[str, Any] | None) -> float | None:
    """Samples/s per node of a *passed* acceptance (None for any other outcome, or a
    document without the figures)."""
    if not doc or doc.get("outcome") != "pass":
        return None
    samples = (doc.get("figures") or {}).get("samples_per_s")
    nodes = doc.get("nodes") or []
    if not isinstance(samples, int | float) or not nodes:
        return None
    return float(samples) / len(nodes)


def keep_out(verdict: Verdict, nodes: Iterable[str], hold: Callable[[str, str], None],
             cordon: Callable[[str, str], Any]) -> list[str]:
    """Not a pass: every node of ``nodes`` held with the reason and cordoned. Returns what
    could not be done (one line each); a pass does nothing."""
    if verdict.passed:
        return []
    reason = verdict.summary()
    problems = []
    for node in sorted(set(nodes)):
        hold(node, reason)
        try:
            cordon(node, reason)
        except BringupError as exc:
            problems.append(f"{node}: could not cordon ({exc})")
            log.warning("%s: could not cordon after a failed pool acceptance: %s", node, exc)
    return problems


__all__ = ["CONTEXT_KEY", "accepted_per_node", "context_name", "document", "figure_text", "journal_text", "keep_out", "latest",
           "record_verdict"]
