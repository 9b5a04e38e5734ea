"""Fleet data: every node's burn-in history as tidy pandas DataFrames.

The one reader of a fleet's history; reports, metrics and the GPU-hours ledger
(:mod:`bringup.insight.ledger`) start from :class:`FleetData` and never parse evidence again.

Where the history is in NetBox:

- **Documents**: every stage's evidence is a journal entry (or several, for a large one)
  on the device, with a fenced ``bringup-evidence`` block (:mod:`bringup.netbox.evidence`). The
  device's ``bringup_evidence`` index names only the *latest* document of each kind, so
  the history is read from all the device's journal entries, in id order.
  A ``burnin`` document opens a burn-in run; the next ``verdict`` document is its
  judgement (:func:`bringup.acceptance.judge_step.judge` writes it right after).
- **Digests, not documents**: the steps record each burn-in and verdict document with its
  digest (:mod:`bringup.acceptance.digest`: the figures these tables hold, with the
  document's SHA-256 and a checksum of its own) in the head of its first entry. The tables
  are made from digests; a document is decoded only when it has none (recorded before
  digests: digested here by the same functions, so the rows are the same), when its digest
  is wrong (a finding; the document's figures are used), or with ``verify`` (every document
  decoded, its SHA-256 checked, and a digest whose figures are not its document's is a
  finding). Documents of other kinds are not read, except with ``verify``. A 10,000-node
  fleet with five burn-ins each reads in seconds (``bench/report.py``; docs/benchmarks.md).
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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bringup.acceptance import digest
from bringup.errors import BringupError, ParseError
from bringup.insight.run_summary import KEY_FIGURES
from bringup.netbox.evidence import Digest, block_meta, decode, digest_problem, read_digest


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
    #: how many of its GPUs NetBox holds out of service (quarantined one by one)
    gpus_out: int = 0
    journal: Sequence[JournalEntry] = ()
    changes: Sequence[StageChange] = ()
    #: the node's ``bringup_reason`` now (who holds it cordoned, when someone else does)
    reason: str = ""


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
    - ``incidents``: node, at, what: each time the node was taken out of service for a fault,
      from its journal (the lifecycle's quarantine and health-watch entries, :data:`INCIDENTS`)
    """

    nodes: pd.DataFrame
    runs: pd.DataFrame
    figures: pd.DataFrame
    gpus: pd.DataFrame
    reasons: pd.DataFrame
    stages: pd.DataFrame
    findings: pd.DataFrame
    incidents: pd.DataFrame = field(default_factory=lambda: _incident_frame([]))


@dataclass
class _Doc:
    kind: str
    at: str
    entry: int
    #: the document's digest (:mod:`bringup.acceptance.digest`), or _UNREADABLE
    data: Any


@dataclass
class _Rows:
    """Plain lists while reading; frames are made once at the end (far cheaper)."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)  # each run's metrics, as the digest has them
    figure_runs: list[tuple[str, int]] = field(default_factory=list)  # (node, run) of each
    gpus: list[tuple] = field(default_factory=list)
    reasons: list[tuple] = field(default_factory=list)
    stages: list[tuple] = field(default_factory=list)
    findings: list[tuple] = field(default_factory=list)
    incidents: list[tuple] = field(default_factory=list)


GPU_COLUMNS = ("node", "run", "gpu", "serial", "max_temp_c", "max_power_w", "gflops", "burn_status")
REASON_COLUMNS = ("node", "run", "check", "code", "blocking", "message")
STAGE_COLUMNS = ("node", "stage", "start")
INCIDENT_COLUMNS = ("node", "at", "what")
#: the journal headings of an incident (a fault took the node out of service), as the
#: lifecycle writes them (bringup.lifecycle.engine: quarantine, suspect)
INCIDENTS = {"## Quarantined in state": "quarantined", "## Health watch: taken out of service": "health watch",
             "## NVSentinel hand-off: taken out of service": "nvsentinel"}


def _incident_frame(rows: list[tuple]) -> pd.DataFrame:
    df = pd.DataFrame.from_records(rows, columns=list(INCIDENT_COLUMNS))
    df["at"] = pd.to_datetime(df["at"], utc=True, errors="coerce", format="ISO8601")
    return df.sort_values(["node", "at"], kind="stable").reset_index(drop=True)
FINDING_COLUMNS = ("node", "path", "error")


def documents(node: str, entries: Iterable[JournalEntry], *,
              verify: bool = False) -> tuple[list[_Doc], list[tuple[str, str, str]]]:
    """The digests of the burn-in and verdict documents in a node's journal, oldest first,
    and (node, path, error) for each document that cannot be reassembled or read. A digest
    recorded with its document is used as it is; a document without one (recorded before
    digests) is decoded and digested here. ``verify``: every document is decoded (those of
    other kinds too), and a recorded digest that is not its document's is a finding."""
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
        if kind in digest.KINDS:
            docs.append(_Doc(kind, parts[0].created, parts[0].id, _digest(node, kind, sha, parts, bad, verify)))
        elif verify:
            _decode(node, kind, parts, bad)
    for (kind, _), parts in open_.items():
        bad.append((node, f"journal #{parts[0].id} ({kind})", "some parts of this document are missing"))
    return docs, bad


#: stands for a document that could not be decoded (its run is then ``unreadable``)
_UNREADABLE = object()


def _decode(node: str, kind: str, parts: list[JournalEntry], bad: list[tuple[str, str, str]]) -> Any:
    try:
        return decode(kind, [p.comments for p in parts], source=f"{node} journal #{parts[0].id}")
    except ParseError as exc:
        bad.append((node, f"journal #{parts[0].id} ({kind}){exc.path.lstrip('$')}", str(exc)))
        return _UNREADABLE


def _digest(node: str, kind: str, sha: str, parts: list[JournalEntry], bad: list[tuple[str, str, str]],
            verify: bool) -> Any:
    """The digest of one whole document: the recorded one when it stands for the document,
    else made from the decoded document. A recorded digest that is wrong is a finding when
    its document reads well (when it does not, that is the finding)."""
    where = f"journal #{parts[0].id} ({kind}) digest"
    found: Digest | None = None
    recorded, wrong = None, None
    try:
        found = read_digest(parts[0].comments)
        if found is not None:
            problem = digest_problem(kind, found, sha)
            wrong = (where, problem) if problem else None
            recorded = None if problem else digest.parse(kind, found.text)
    except ParseError as exc:
        # a digest of another shape (older or newer code) is not wrong, only not ours to read
        wrong = None if _other_version(found) else (where + exc.path.lstrip("$"), str(exc))
    if recorded is not None and not verify:
        return recorded
    document = _decode(node, kind, parts, bad)
    if document is _UNREADABLE:
        return _UNREADABLE
    fresh = digest.of(kind, document)
    if recorded is not None and found is not None:
        problem = digest_problem(kind, found, sha, fresh)
        wrong = (where, problem) if problem else None
    if wrong:
        bad.append((node, wrong[0], f"{wrong[1]}; the document's figures are used"))
    return digest.parse(kind, fresh)


def _other_version(found: Any) -> bool:
    try:
        data = found.data if found is not None else None
    except ParseError:
        return False
    return isinstance(data, dict) and data.get("v") != digest.VERSION


def _burnin(h: NodeHistory, doc: _Doc, run: int, rows: _Rows) -> dict[str, Any]:
    """A run's row, and its figures and GPU rows, from its burn-in document's digest."""
    row: dict[str, Any] = {"node": h.node, "run": run, "burnin_at": doc.at, "entry": doc.entry}
    d = doc.data
    if d is _UNREADABLE:
        return row
    rows.findings.extend((h.node, f"journal #{doc.entry} (burnin){path}", message) for path, message in d.problems)
    row.update(profile=d.profile, rc=d.rc)
    if d.metrics is None:
        return row  # the agent's document could not be parsed: no figures (never a pass)
    row.update(agent_version=d.agent_version, started=d.started, finished=d.finished, partial=d.partial)
    # the digest's own dict, not a copy: pydantic's parser shares the key strings between runs
    rows.figures.append(d.metrics)
    rows.figure_runs.append((h.node, run))
    rows.gpus.extend((h.node, run, *g) for g in d.gpus)
    return row


def _verdict(h: NodeHistory, doc: _Doc, run: int, row: dict[str, Any], rows: _Rows) -> None:
    row.update(judged_at=doc.at, verdict="unreadable")
    d = doc.data
    if d is _UNREADABLE:
        return
    rows.findings.extend((h.node, f"journal #{doc.entry} (verdict){path}", message) for path, message in d.problems)
    if d.status is None:
        return
    row["verdict"] = d.status
    row["reasons"] = "; ".join(r[3] for r in d.reasons)
    for f in KEY_FIGURES:
        row[f] = d.figures.get(f)
    rows.reasons.extend((h.node, run, *r) for r in d.reasons)


def _node(h: NodeHistory, rows: _Rows, verify: bool) -> None:
    rows.nodes.append({"node": h.node, "site": h.site, "rack": h.rack, "pool": h.pool, "sku": h.sku,
                       "gpus": h.gpus, "gpus_out": h.gpus_out, "gpus_healthy": max(h.gpus - h.gpus_out, 0),
                       "stage": h.stage, "reason": h.reason})
    rows.stages.extend((h.node, c.stage, c.at) for c in h.changes)
    rows.incidents.extend((h.node, e.created, what) for e in h.journal
                          for head, what in INCIDENTS.items() if e.comments.startswith(head))
    docs, bad = documents(h.node, h.journal, verify=verify)
    rows.findings.extend(bad)
    run, row = 0, None
    for doc in docs:
        if doc.kind == "burnin":
            if row is not None:
                rows.runs.append(row)
            run += 1
            row = _burnin(h, doc, run, rows)
            row.setdefault("verdict", "pending")  # collected, not judged yet: never a pass
        elif doc.kind == "verdict":
            if row is None or "judged_at" in row:  # a verdict whose burn-in document is gone
                if row is not None:
                    rows.runs.append(row)
                run += 1
                row = {"node": h.node, "run": run}
            _verdict(h, doc, run, row, rows)
    if row is not None:
        rows.runs.append(row)


def build(histories: Iterable[NodeHistory], *, verify: bool = False) -> FleetData:
    """The fleet's tables from already-fetched histories (one pass; histories may be a
    generator, so a large fleet is never held as documents all at once). ``verify``: decode
    every document and check the recorded digests against them (see :func:`documents`)."""
    rows = _Rows()
    for h in histories:
        try:
            _node(h, rows, verify)
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
    figures = pd.DataFrame.from_records(rows.figures) if rows.figures else pd.DataFrame()
    figures.insert(0, "node", [n for n, _ in rows.figure_runs])
    figures.insert(1, "run", [r for _, r in rows.figure_runs])
    stages = pd.DataFrame.from_records(rows.stages, columns=list(STAGE_COLUMNS))
    stages["start"] = pd.to_datetime(stages["start"], utc=True, errors="coerce", format="ISO8601")
    stages = stages.sort_values(["node", "start"], kind="stable").reset_index(drop=True)
    stages["end"] = stages.groupby("node")["start"].shift(-1)
    nodes = pd.DataFrame.from_records(rows.nodes, columns=["node", "site", "rack", "pool", "sku", "gpus", "gpus_out",
                                                           "gpus_healthy", "stage", "reason"])
    nodes["reason"] = nodes["reason"].fillna("").astype(str)
    for col in ("site", "rack", "pool", "sku", "stage"):
        nodes[col] = nodes[col].astype("category")
    return FleetData(
        nodes=nodes, runs=runs, figures=figures,
        gpus=pd.DataFrame.from_records(rows.gpus, columns=list(GPU_COLUMNS)),
        reasons=pd.DataFrame.from_records(rows.reasons, columns=list(REASON_COLUMNS)),
        stages=stages, findings=pd.DataFrame.from_records(rows.findings, columns=list(FINDING_COLUMNS)),
        incidents=_incident_frame(rows.incidents))


def load(netbox: Any, *, site: str | None = None, rack: str | None = None, verify: bool = False,
         chunk: int = 500) -> FleetData:
    """The fleet's tables from NetBox, through the adapter (:class:`~bringup.netbox.adapter.NetBox`):
    the nodes, then their journal entries, stage changes and GPUs out of service in bulk
    reads, ``chunk`` nodes at a time (so only that many nodes' documents are held at once)."""
    from bringup.netbox.gpu_records import failed_gpus
    records = netbox.nodes(site=site, rack=rack)

    def histories():
        for n in range(0, len(records), chunk):
            part = records[n:n + chunk]
            ids = [r.id for r in part]
            journals = netbox.journals(ids)
            changes = netbox.stage_changes(ids)
            out = failed_gpus(netbox, ids)
            for r in part:
                yield NodeHistory(
                    node=r.name, site=r.site, rack=r.rack, pool=str((r.pool or {}).get("name") or "default"),
                    sku=r.sku.sku, gpus=r.sku.gpu.count, stage=r.stage,
                    gpus_out=len({g.index for g in out.get(r.id, [])}),
                    journal=[JournalEntry(int(e["id"]), str(e["created"]), str(e.get("kind") or ""),
                                          str(e.get("comments") or "")) for e in journals.get(r.id, [])],
                    changes=[StageChange(at, stage) for at, stage in changes.get(r.id, [])],
                    reason=str((r.custom_fields or {}).get("bringup_reason") or ""))
    return build(histories(), verify=verify)
