"""Fleet data: every node's burn-in history as tidy pandas DataFrames.

The one reader of a fleet's history; reports, metrics and the GPU-hours ledger
(:mod:`bringup.insight.ledger`) start from :class:`FleetData` and never parse evidence again.

Where the history is in NetBox:

- **Documents**: every stage's evidence is a journal entry (or several, for a large one)
  on the device, with a fenced ``bringup-evidence`` block (:mod:`bringup.netbox.evidence`). The
  device's ``bringup_evidence`` index names only the *latest* document of each kind, so
  the history is read from all the device's journal entries, in id order, and each
  document is reassembled with :func:`bringup.netbox.evidence.decode` (its SHA-256 checked).
  A ``burnin`` document opens a burn-in run; the next ``verdict`` document is its
  judgement (:func:`bringup.acceptance.judge_step.judge` writes it right after).
- **Stage timestamps**: the lifecycle writes a transition as an update of the device's
  stage custom field, with no journal entry of its own; NetBox's change log
  (``core.object_changes``) holds each update with its time and the field's new value.
  The loader hands them in as :class:`StageChange` values. (NetBox prunes its change
  log after ``CHANGELOG_RETENTION`` days, 90 by default: set it to 0 to keep it.)

:func:`build` is pure (already-fetched entries in, DataFrames out); :func:`load` fetches
through :class:`~bringup.netbox.adapter.NetBox`. A document that cannot be read is a
row of ``findings`` (node, path, error) and its run shows ``unreadable``: never the end
of the load, never a pass.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import ValidationError

from bringup.acceptance.judge import Verdict
from bringup.acceptance.result import BurnInResult, parse_result
from bringup.errors import BringupError, ParseError
from bringup.insight.run_summary import KEY_FIGURES
from bringup.netbox.evidence import block_meta, decode


@dataclass(frozen=True)
class JournalEntry:
    """One NetBox journal entry of a device, as the adapter returns it."""

    id: int
    created: str
    kind: str
    comments: str


@dataclass(frozen=True)
class StageChange:
    """The node entered ``stage`` at ``at`` (ISO 8601, from NetBox's change log)."""

    at: str
    stage: str


@dataclass
class NodeHistory:
    """What NetBox holds about one node, fetched and not yet interpreted."""

    node: str
    site: str = ""
    rack: str = ""
    pool: str = "default"
    sku: str = ""
    gpus: int = 0
    stage: str = ""
    journal: Sequence[JournalEntry] = ()
    changes: Sequence[StageChange] = ()


@dataclass
class FleetData:
    """The tables; every one has a ``node`` column, and the run tables a ``run`` column
    (1 for a node's first burn-in).

    - ``nodes``: node, site, rack, pool, sku, gpus, stage (now)
    - ``runs``: one row per burn-in: when, agent figures, verdict, reasons, KEY_FIGURES
    - ``figures``: one row per burn-in, a column per numeric check metric (``nccl.busbw_largest_gbps``)
    - ``gpus``: one row per GPU per burn-in: serial, temperature, power, gpu-burn Gflop/s
    - ``reasons``: one row per verdict reason: check, code, blocking, message
    - ``stages``: one row per stage entered: stage, start, end (NaT: still there)
    - ``findings``: node, path, error: evidence that could not be read
    """

    nodes: pd.DataFrame
    runs: pd.DataFrame
    figures: pd.DataFrame
    gpus: pd.DataFrame
    reasons: pd.DataFrame
    stages: pd.DataFrame
    findings: pd.DataFrame


@dataclass
class _Doc:
    kind: str
    at: str
    entry: int
    data: Any


@dataclass
class _Rows:
    """Plain lists while reading; frames are made once at the end (far cheaper)."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    gpus: list[tuple] = field(default_factory=list)
    reasons: list[tuple] = field(default_factory=list)
    stages: list[tuple] = field(default_factory=list)
    findings: list[tuple] = field(default_factory=list)


GPU_COLUMNS = ("node", "run", "gpu", "serial", "max_temp_c", "max_power_w", "gflops", "burn_status")
REASON_COLUMNS = ("node", "run", "check", "code", "blocking", "message")
STAGE_COLUMNS = ("node", "stage", "start")
FINDING_COLUMNS = ("node", "path", "error")


def documents(node: str, entries: Iterable[JournalEntry]) -> tuple[list[_Doc], list[tuple[str, str, str]]]:
    """The evidence documents in a node's journal, oldest first, and (node, path, error)
    for each that cannot be reassembled or decoded."""
    docs: list[_Doc] = []
    bad: list[tuple[str, str, str]] = []
    open_: dict[tuple[str, str], list[JournalEntry]] = {}
    for e in sorted(entries, key=lambda e: e.id):
        meta = block_meta(e.comments)
        if meta is None:
            continue  # a note (quarantine, hold): not a document
        kind, sha = meta.get("kind", "?"), meta.get("sha256", "")
        n, _, total = meta.get("part", "1/1").partition("/")
        key = (kind, sha)
        if n == "1" and key in open_:
            first = open_.pop(key)[0]
            bad.append((node, f"journal #{first.id} ({kind})", "some parts of this document are missing"))
        parts = open_.setdefault(key, [])
        parts.append(e)
        if str(len(parts)) != (total or "1"):
            continue
        del open_[key]
        try:
            data = decode(kind, [p.comments for p in parts], source=f"{node} journal #{parts[0].id}")
        except ParseError as exc:
            bad.append((node, f"journal #{parts[0].id} ({kind}){exc.path.lstrip('$')}", str(exc)))
            data = _UNREADABLE
        docs.append(_Doc(kind, parts[0].created, parts[0].id, data))
    for (kind, _), parts in open_.items():
        bad.append((node, f"journal #{parts[0].id} ({kind})", "some parts of this document are missing"))
    return docs, bad


#: stands for a document that could not be decoded (its run is then ``unreadable``)
_UNREADABLE = object()


def _json_path(loc: Iterable[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def _burnin(h: NodeHistory, doc: _Doc, run: int, rows: _Rows) -> tuple[dict[str, Any], BurnInResult | None]:
    """A run's row from its burn-in document (the agent's result, parsed by the one parser)."""
    row: dict[str, Any] = {"node": h.node, "run": run, "burnin_at": doc.at, "entry": doc.entry}
    stored = doc.data
    where = f"journal #{doc.entry} (burnin)"
    if stored is _UNREADABLE:
        return row, None
    if not isinstance(stored, dict) or "document" not in stored:
        rows.findings.append((h.node, where, "the burn-in evidence holds no agent document"))
        return row, None
    plan = stored.get("plan") if isinstance(stored.get("plan"), dict) else {}
    row.update(profile=plan.get("profile"), rc=stored.get("rc"))
    raw = stored["document"]
    if isinstance(raw, dict) and isinstance(raw.get("unparsed"), str):
        raw = raw["unparsed"]  # the node's file was not JSON: parse_result says where it breaks
    try:
        result = parse_result(raw, source=f"{h.node} run {run}")
    except ParseError as exc:
        rows.findings.append((h.node, f"{where}.document{exc.path.lstrip('$')}", str(exc)))
        return row, None
    row.update(agent_version=result.agent_version, started=result.started, finished=result.finished,
               partial=result.partial)
    return row, result


def _figures(h: NodeHistory, run: int, result: BurnInResult, rows: _Rows) -> None:
    fig: dict[str, Any] = {"node": h.node, "run": run}
    for c in result.checks:
        for metric, v in c.metrics.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                # interned: 50 000 runs share a few dozen column names
                fig[sys.intern(f"{c.name}.{metric}")] = v
    rows.figures.append(fig)
    inv, clocks, burn = result.check("inventory"), result.check("clocks"), result.check("gpu_burn")
    serials = result.serials()
    per: dict[int, dict[str, Any]] = {i: {"serial": s} for i, s in enumerate(serials)}
    for g in (clocks.data.get("gpus") if clocks else None) or []:
        if isinstance(g, dict) and isinstance(g.get("gpu"), int):
            per.setdefault(g["gpu"], {}).update(max_temp_c=g.get("max_temp_c"), max_power_w=g.get("max_power_w"))
    if burn is not None:
        gflops = burn.data.get("gflops") or []
        status = burn.data.get("gpus") or {}
        for i, v in enumerate(gflops if isinstance(gflops, list) else []):
            per.setdefault(i, {})["gflops"] = v
        for i, st in (status.items() if isinstance(status, dict) else []):
            if str(i).isdigit():
                per.setdefault(int(i), {})["burn_status"] = st
    if inv is None and not per:
        return
    for i in sorted(per):
        g = per[i]
        rows.gpus.append((h.node, run, i, g.get("serial"), g.get("max_temp_c"), g.get("max_power_w"),
                          g.get("gflops"), g.get("burn_status")))


def _verdict(h: NodeHistory, doc: _Doc, run: int, row: dict[str, Any], rows: _Rows) -> None:
    row.update(judged_at=doc.at, verdict="unreadable")
    if doc.data is _UNREADABLE:
        return
    try:
        verdict = Verdict.model_validate(doc.data)
    except ValidationError as exc:
        first = exc.errors()[0]
        rows.findings.append((h.node, f"journal #{doc.entry} (verdict){_json_path(first['loc']).lstrip('$')}",
                              first["msg"]))
        return
    row["verdict"] = verdict.status
    row["reasons"] = "; ".join(r.message for r in verdict.reasons)
    figures = doc.data.get("figures") if isinstance(doc.data.get("figures"), dict) else {}
    for f in KEY_FIGURES:
        row[f] = figures.get(f)
    rows.reasons.extend((h.node, run, r.check, r.code, r.blocking, r.message) for r in verdict.reasons)


def _node(h: NodeHistory, rows: _Rows) -> None:
    rows.nodes.append({"node": h.node, "site": h.site, "rack": h.rack, "pool": h.pool, "sku": h.sku,
                       "gpus": h.gpus, "stage": h.stage})
    rows.stages.extend((h.node, c.stage, c.at) for c in h.changes)
    docs, bad = documents(h.node, h.journal)
    rows.findings.extend(bad)
    run, row = 0, None
    for doc in docs:
        if doc.kind == "burnin":
            if row is not None:
                rows.runs.append(row)
            run += 1
            row, result = _burnin(h, doc, run, rows)
            row.setdefault("verdict", "pending")  # collected, not judged yet: never a pass
            if result is not None:
                try:
                    _figures(h, run, result, rows)
                except (AttributeError, TypeError, ValueError) as exc:  # odd shapes the model lets through
                    rows.findings.append((h.node, f"journal #{doc.entry} (burnin).document", f"odd figures: {exc}"))
        elif doc.kind == "verdict":
            if row is None or "judged_at" in row:  # a verdict whose burn-in document is gone
                if row is not None:
                    rows.runs.append(row)
                run += 1
                row = {"node": h.node, "run": run}
            _verdict(h, doc, run, row, rows)
    if row is not None:
        rows.runs.append(row)


def build(histories: Iterable[NodeHistory]) -> FleetData:
    """The fleet's tables from already-fetched histories (one pass; histories may be a
    generator, so a large fleet is never held as documents all at once)."""
    rows = _Rows()
    for h in histories:
        try:
            _node(h, rows)
        except BringupError as exc:  # whatever else: that node is a finding, the others load
            rows.findings.append((h.node, "$", str(exc)))
    return _frames(rows)


def _frames(rows: _Rows) -> FleetData:
    run_cols = ["node", "run", "burnin_at", "judged_at", "entry", "profile", "rc", "agent_version", "started",
                "finished", "partial", "verdict", "reasons", *KEY_FIGURES]
    runs = pd.DataFrame.from_records(rows.runs, columns=run_cols)
    for col in ("burnin_at", "judged_at", "started", "finished"):
        runs[col] = pd.to_datetime(runs[col], utc=True, errors="coerce", format="ISO8601")
    runs["duration_s"] = (runs["finished"] - runs["started"]).dt.total_seconds()
    runs["verdict"] = runs["verdict"].fillna("pending")
    figures = pd.DataFrame.from_records(rows.figures) if rows.figures else pd.DataFrame(columns=["node", "run"])
    stages = pd.DataFrame.from_records(rows.stages, columns=list(STAGE_COLUMNS))
    stages["start"] = pd.to_datetime(stages["start"], utc=True, errors="coerce", format="ISO8601")
    stages = stages.sort_values(["node", "start"], kind="stable").reset_index(drop=True)
    stages["end"] = stages.groupby("node")["start"].shift(-1)
    nodes = pd.DataFrame.from_records(rows.nodes, columns=["node", "site", "rack", "pool", "sku", "gpus", "stage"])
    for col in ("site", "rack", "pool", "sku", "stage"):
        nodes[col] = nodes[col].astype("category")
    return FleetData(
        nodes=nodes, runs=runs, figures=figures,
        gpus=pd.DataFrame.from_records(rows.gpus, columns=list(GPU_COLUMNS)),
        reasons=pd.DataFrame.from_records(rows.reasons, columns=list(REASON_COLUMNS)),
        stages=stages, findings=pd.DataFrame.from_records(rows.findings, columns=list(FINDING_COLUMNS)))


def load(netbox: Any, *, site: str | None = None, rack: str | None = None) -> FleetData:
    """The fleet's tables from NetBox, through the adapter (:class:`~bringup.netbox.adapter.NetBox`):
    the nodes, then all their journal entries and stage changes in a few bulk reads."""
    records = netbox.nodes(site=site, rack=rack)
    ids = [r.id for r in records]
    journals = netbox.journals(ids)
    changes = netbox.stage_changes(ids)

    def histories():
        for r in records:
            yield NodeHistory(
                node=r.name, site=r.site, rack=r.rack, pool=str((r.pool or {}).get("name") or "default"),
                sku=r.sku.sku, gpus=r.sku.gpu.count, stage=r.stage,
                journal=[JournalEntry(int(e["id"]), str(e["created"]), str(e.get("kind") or ""),
                                      str(e.get("comments") or "")) for e in journals.get(r.id, [])],
                changes=[StageChange(at, stage) for at, stage in changes.get(r.id, [])])
    return build(histories())
