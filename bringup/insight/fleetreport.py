"""The fleet report: tables from :mod:`bringup.insight.fleetdata` and :mod:`bringup.insight.ledger`, plots
(:mod:`bringup.insight.report_plots`) and one self-contained HTML page (:mod:`bringup.insight.report_html`),
plus every table as CSV and Parquet.

Nothing here reads evidence: the input is a :class:`~bringup.insight.fleetdata.FleetData` (already
loaded) and the thresholds file; :func:`tables` is pure and :func:`write` writes a folder::

    DIR/index.html              the page (images embedded, no network fetches, no JS)
    DIR/data/<table>.csv        each table of :class:`ReportTables`
    DIR/data/<table>.parquet

A node is **faulty** when it is quarantined (or in hardware inspection) or its last verdict
is a fail; the page marks such nodes in every plot and lists them in a table of their own.

The busbw peer band is the band :mod:`bringup.acceptance.peers` does not flag: a value is an outlier
there when it is more than ``k`` scaled MADs *and* more than ``min_relative`` of the median
away, so the band is median ± max(k·MAD·1.4826, min_relative·median), with ``k`` and
``min_relative`` from the ``peers:`` section of thresholds.yaml (the busbw figure's own
values where it sets them). It is drawn from each node's latest busbw, per SKU, and only with
at least ``min_peers`` peers, as the judge would; like the judge's, the peers leave out runs
whose nccl check failed (a reason of check ``nccl`` in the verdict): a bad node is no reference. The threshold is the SKU's value named by the
busbw rule of the same file.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from bringup.acceptance.peers import MAD_SCALE
from bringup.acceptance.thresholds import ThresholdsFile, load_thresholds_file
from bringup.insight.fleetdata import FleetData, load
from bringup.insight.ledger import node_ledger, pool_ledger
from bringup.lifecycle.engine import LifecycleError, State, parse_state

BUSBW = ("nccl", "busbw_largest_gbps")
#: stages whose nodes are out of service for a fault
FAULT_STAGES = {State.QUARANTINED, State.INSPECTION}


@dataclass
class ReportTables:
    """What the page shows, each also written as CSV and Parquet (plain dtypes: strings,
    numbers, booleans, UTC timestamps; categories are made strings so files read back alike)."""

    nodes: pd.DataFrame     # one row per node: where, stage, last verdict, figures, faulty
    busbw: pd.DataFrame     # one row per node with a busbw figure: value, threshold, band
    bands: pd.DataFrame     # one row per SKU: threshold, peer median and band (or why none)
    gpus: pd.DataFrame      # one row per GPU of each node's latest burn-in
    verdicts: pd.DataFrame  # one row per burn-in run
    reasons: pd.DataFrame   # one row per verdict reason, with its run's time
    ledger: pd.DataFrame    # one row per node: hours by account, planned to serving
    findings: pd.DataFrame  # evidence that could not be read
    unitcost: pd.DataFrame  # per pool: the normalised cost's terms, accepted units, $ per unit; sources

    def items(self) -> list[tuple[str, pd.DataFrame]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


def select(fd: FleetData, pool: str | None) -> FleetData:
    """Only the nodes of ``pool`` (site and rack are filtered by the loader already)."""
    if not pool:
        return fd
    keep = set(fd.nodes.loc[fd.nodes["pool"].astype(str) == pool, "node"])
    return FleetData(**{f.name: _only(getattr(fd, f.name), keep) for f in fields(FleetData)})


def _only(df: pd.DataFrame, keep: set[str]) -> pd.DataFrame:
    return df[df["node"].isin(keep)].reset_index(drop=True) if "node" in df.columns else df


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    df = df.reset_index(drop=True)
    for col in df.columns:
        if isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype(str)
    return df


def _fault_stage(stage: Any) -> bool:
    try:
        return parse_state(str(stage)) in FAULT_STAGES
    except LifecycleError:
        return False  # a hand-edited stage: shown as is, not called a fault


def _latest(df: pd.DataFrame) -> pd.DataFrame:
    """Each node's row of its highest run."""
    if df.empty:
        return df
    return df.sort_values(["node", "run"], kind="stable").groupby("node", sort=False).tail(1)


def _at(out: pd.DataFrame, by_node: pd.Series) -> pd.Series:
    """``by_node``'s value for each row of ``out`` (reindex: ``Series.map`` with an empty
    mapper casts it to float, which a timestamp column refuses)."""
    return by_node.reindex(out["node"]).set_axis(out.index)


def _floats(s: pd.Series) -> pd.Series:
    """Numbers as float (NaN where none); an empty map's dtype is whatever its index was."""
    if s.empty:
        return pd.Series(dtype=float, index=s.index)
    return pd.to_numeric(s, errors="coerce").astype(float)


def _node_table(fd: FleetData, ledger: pd.DataFrame) -> pd.DataFrame:
    nodes = _plain(fd.nodes)
    last = _latest(fd.runs).set_index("node")
    counts = fd.runs.groupby("node").size()
    out = nodes.copy()
    out["runs"] = _at(out, counts).fillna(0).astype(int)
    out["last_verdict"] = _at(out, last["verdict"]).fillna("none").astype(str)
    out["last_judged_at"] = pd.to_datetime(_at(out, last["judged_at"]), utc=True)
    out["last_reasons"] = _at(out, last["reasons"]).fillna("").astype(str)
    out["busbw_gbps"] = _floats(_at(out, last["busbw_gbps"]))
    out["max_temp_c"] = _floats(_at(out, last["max_temp_c"]))
    out["planned_to_serving_h"] = _floats(_at(out, ledger.set_index("node")["planned_to_serving_h"]))
    quarantined = out["stage"].map(_fault_stage).astype(bool)
    failed = out["last_verdict"] == "fail"
    out["mark"] = ["quarantined" if q else "failed" if f else "" for q, f in zip(quarantined, failed, strict=True)]
    out["faulty"] = quarantined | failed
    incidents = fd.incidents.groupby("node")["at"]
    out["incidents"] = _at(out, incidents.size()).fillna(0).astype(int)
    out["mtbi_h"] = _floats(_at(out, incidents.apply(mtbi_hours)))
    out["held_by"] = [held_by(r) for r in (out["reason"] if "reason" in out else [""] * len(out))]
    return out.sort_values("node", kind="stable").reset_index(drop=True)


#: how a node's NetBox reason says someone other than bringup holds it cordoned
#: (bringup.service.reconcile.HELD_BY writes it; insight reads NetBox only)
HELD_BY = "cordoned outside bringup, held by "


def held_by(reason: Any) -> str:
    """Who holds the node cordoned, when its reason says someone other than bringup does."""
    text = str(reason or "")
    return text.removeprefix(HELD_BY) if text.startswith(HELD_BY) else ""


def mtbi_hours(times: pd.Series) -> float:
    """Mean time between incidents, in hours: the mean gap between a node's consecutive
    incidents (NaN with fewer than two: no gap to measure yet)."""
    at = pd.to_datetime(times, utc=True).dropna().sort_values()
    gaps = at.diff().dropna().dt.total_seconds() / 3600.0
    return float(gaps.mean()) if len(gaps) else float("nan")


def _busbw_rule(tf: ThresholdsFile, sku: str) -> float | None:
    values = {**tf.defaults, **tf.skus.get(sku, {})}
    for rule in tf.rules:
        if (rule.check, rule.metric) == BUSBW and rule.op in (">=", ">"):
            limit = rule.limit(values)
            return float(limit) if isinstance(limit, int | float) else None
    return None


def _band(sku: str, nodes: int, values: list[float], tf: ThresholdsFile) -> dict[str, Any]:
    policy = tf.peers
    fig = next((f for f in policy.figures.values() if (f.check, f.metric) == BUSBW), None)
    row: dict[str, Any] = {"sku": sku, "nodes": nodes, "peers": len(values), "threshold_gbps": _busbw_rule(tf, sku),
                           "min_peers": policy.min_peers, "k": None, "min_relative": None, "median_gbps": None,
                           "scaled_mad_gbps": None, "band_lo_gbps": None, "band_hi_gbps": None, "note": ""}
    if fig is None:
        row["note"] = "busbw is not compared with peers (thresholds.yaml peers.figures)"
        return row
    k = fig.k if fig.k is not None else policy.k
    share = fig.min_relative if fig.min_relative is not None else policy.min_relative
    row.update(k=k, min_relative=share)
    if len(values) < policy.min_peers:
        row["note"] = f"{len(values)} peers, {policy.min_peers} needed: no band"
        return row
    median = statistics.median(values)
    mad = MAD_SCALE * statistics.median(abs(v - median) for v in values)
    half = max(k * mad, share * abs(median))
    row.update(median_gbps=median, scaled_mad_gbps=mad, band_lo_gbps=median - half, band_hi_gbps=median + half,
               note=f"median ± max({k:g}·MAD, {share:.0%})")
    return row


def _busbw_tables(fd: FleetData, nodes: pd.DataFrame, tf: ThresholdsFile) -> tuple[pd.DataFrame, pd.DataFrame]:
    col = ".".join(BUSBW)
    figs = fd.figures
    if col in figs.columns:
        have = figs.loc[figs[col].notna(), ["node", "run", col]]
        latest = _latest(have).rename(columns={col: "busbw_gbps"})
    else:
        latest = pd.DataFrame({"node": pd.Series(dtype=str), "run": pd.Series(dtype=int),
                               "busbw_gbps": pd.Series(dtype=float)})
    info = nodes.set_index("node")
    nccl_failed = set(fd.reasons.loc[fd.reasons["check"] == BUSBW[0], "node"] + "\0" +
                      fd.reasons.loc[fd.reasons["check"] == BUSBW[0], "run"].astype(str))
    latest = latest.assign(sku=latest["node"].map(info["sku"]).astype(str),
                           faulty=latest["node"].map(info["faulty"]).astype(bool),
                           peer=~(latest["node"] + "\0" + latest["run"].astype(str)).isin(nccl_failed))
    bands = pd.DataFrame([_band(sku, len(df), list(df.loc[df["peer"], "busbw_gbps"].astype(float)), tf)
                          for sku, df in latest.groupby("sku", sort=True)],
                         columns=list(_band("", 0, [], tf)))
    by = bands.set_index("sku")
    out = latest[["node", "sku", "run", "busbw_gbps", "faulty", "peer"]].copy()
    for c in ("threshold_gbps", "median_gbps", "band_lo_gbps", "band_hi_gbps"):
        out[c] = out["sku"].map(by[c]).astype(float)
    out["below_threshold"] = out["busbw_gbps"] < out["threshold_gbps"]
    out["outside_band"] = out["busbw_gbps"] < out["band_lo_gbps"]  # busbw's bad side is lower
    return out.sort_values(["sku", "node"], kind="stable").reset_index(drop=True), bands


def _unitcost(per_node: pd.DataFrame, gpu_hour_usd: float,
              accepted: dict[str, tuple[float | None, str]]) -> pd.DataFrame:
    """The normalised cost of each pool (:mod:`bringup.insight.unitcost`), one row per term."""
    from bringup.insight.unitcost import load_rates, unit_cost
    rows = []
    pools = pool_ledger(per_node) if not per_node.empty else pd.DataFrame()
    rates = load_rates()
    for pool, r in pools.iterrows():
        if pool == "all":
            continue
        per, run = accepted.get(str(pool), (None, ""))
        uc = unit_cost(str(pool), r, gpu_hour_usd, rates, per, run)
        rows += [(str(pool), t.name, t.usd, t.source) for t in uc.terms]
        rows += [(str(pool), "total $", uc.total_usd, "the terms above"),
                 (str(pool), "accepted units (M samples)", uc.accepted_units_m, uc.units_source),
                 (str(pool), "$ per M accepted samples", uc.usd_per_m_units, "total / accepted units")]
    out = pd.DataFrame(rows, columns=["pool", "term", "value", "source"])
    out["value"] = pd.to_numeric(out["value"], errors="coerce").astype(float)
    return _plain(out)


def tables(fd: FleetData, *, at: pd.Timestamp, gpu_hour_usd: float,
           thresholds: ThresholdsFile | None = None,
           accepted: dict[str, tuple[float | None, str]] | None = None) -> ReportTables:
    """Every table of the report, from the fleet's frames (pure). ``accepted``: pool ->
    (accepted samples/s per node from its latest passed acceptance, the run)."""
    tf = thresholds or load_thresholds_file()
    per_node = node_ledger(fd.nodes, fd.stages, at, gpu_hour_usd)
    ledger = _plain(per_node.reset_index())
    nodes = _node_table(fd, ledger)
    busbw, bands = _busbw_tables(fd, nodes, tf)
    faulty = nodes.set_index("node")["faulty"]
    last_runs = _latest(fd.runs)[["node", "run"]]
    gpus = fd.gpus.merge(last_runs, on=["node", "run"], how="inner")
    gpus = gpus.assign(faulty=gpus["node"].map(faulty).astype(bool))
    gpus = gpus[["node", "run", "gpu", "serial", "max_temp_c", "max_power_w", "gflops", "burn_status", "faulty"]]
    verdicts = fd.runs[["node", "run", "burnin_at", "judged_at", "verdict", "reasons", "busbw_gbps",
                        "max_temp_c", "duration_s"]].copy()
    verdicts["reasons"] = verdicts["reasons"].fillna("").astype(str)
    for c in ("busbw_gbps", "max_temp_c"):
        verdicts[c] = pd.to_numeric(verdicts[c], errors="coerce")
    reasons = fd.reasons.merge(fd.runs[["node", "run", "judged_at"]], on=["node", "run"], how="left")
    reasons = reasons[["node", "run", "judged_at", "check", "code", "blocking", "message"]]
    keep = ["node", "pool", "gpus", "burnin_h", "quarantine_h", "waiting_h", "serving_h", "unknown_h", "gpu_h",
            "failed_burnin_gpu_h", "planned_to_serving_h", "accepted", "total_cost_usd"]
    return ReportTables(nodes=nodes, busbw=busbw, bands=bands,
                        gpus=_plain(gpus.sort_values(["node", "gpu"], kind="stable")),
                        verdicts=_plain(verdicts.sort_values(["node", "run"], kind="stable")),
                        reasons=_plain(reasons), ledger=ledger[keep], findings=_plain(fd.findings),
                        unitcost=_unitcost(per_node, gpu_hour_usd, accepted or {}))


def write(out: Path, fd: FleetData, *, at: pd.Timestamp, gpu_hour_usd: float, pool: str | None = None,
          filters: dict[str, str | None] | None = None, thresholds: ThresholdsFile | None = None,
          accepted: dict[str, tuple[float | None, str]] | None = None) -> Path:
    """Write the page and its data files under ``out``; returns the page's path."""
    from bringup.insight.report_html import render
    from bringup.insight.report_plots import plots

    t = tables(select(fd, pool), at=at, gpu_hour_usd=gpu_hour_usd, thresholds=thresholds, accepted=accepted)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    files = []
    for name, df in t.items():
        df.to_csv(data / f"{name}.csv", index=False)
        df.to_parquet(data / f"{name}.parquet", index=False)
        files += [f"data/{name}.csv", f"data/{name}.parquet"]
    page = render(t, plots(t), filters={**(filters or {}), "pool": pool}, at=at, files=files)
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


def write_site(netbox: Any, site: str, out: Path, *, gpu_hour_usd: float) -> Path:
    """The report of ``site`` as NetBox holds it now, written under ``out`` (what a run
    links and what the demo prints); returns the page's path."""
    fd = load(netbox, site=site)
    return write(out, fd, at=pd.Timestamp.now(tz="UTC"), gpu_hour_usd=gpu_hour_usd,
                 filters={"site": site}, accepted=accepted_throughput(netbox, sorted(set(fd.nodes["pool"].astype(str)))))


def accepted_throughput(netbox: Any, pools: list[str]) -> dict[str, tuple[float | None, str]]:
    """pool -> (samples/s per node of its latest passed acceptance, the run), from NetBox."""
    from bringup.workload.record import accepted_per_node, latest
    out = {}
    for pool in pools:
        doc = latest(netbox, pool)
        out[pool] = (accepted_per_node(doc), f"{(doc or {}).get('run', '')} ({(doc or {}).get('outcome', 'none')})")
    return out
