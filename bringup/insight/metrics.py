"""Prometheus metrics of the fleet, from :mod:`bringup.insight.fleetdata`'s tables and the ledger.

Pure: :func:`families` turns one :class:`~bringup.insight.fleetdata.FleetData` (and the query time)
into metric families, and :class:`FleetCollector` serves the last such snapshot, so a
scrape always shows one consistent picture and never waits on NetBox. Nothing here parses
evidence: the figures are the columns fleetdata already made.

Every per-node metric carries the labels ``node, site, rack, pool, sku`` (node is unique,
so they add no series; they let PromQL group by rack or SKU without a join):

- ``bringup_node_stage{...,stage}``: one-hot over the lifecycle's stages (1 for the
  current one, 0 for the rest; a stage the lifecycle does not know is shown as itself);
- ``bringup_node_verdict{...,verdict}``: one-hot over the last burn-in's verdict (all 0
  before the first burn-in);
- ``bringup_node_last_burnin_timestamp_seconds``, ``bringup_node_burnin_runs``;
- the last burn-in's key figures (:data:`bringup.insight.run_summary.KEY_FIGURES`):
  ``bringup_node_busbw_gbps``, ``bringup_node_max_temp_celsius``, ``bringup_node_burnin_gpus``,
  ``bringup_node_driver_info{...,driver}``, and every numeric check metric as
  ``bringup_node_check_figure{...,check,metric}``;
- per GPU of the last burn-in (labels node, sku, gpu, serial): ``bringup_gpu_gflops``,
  ``bringup_gpu_max_temp_celsius``, ``bringup_gpu_max_power_watts``;
- the ledger: ``bringup_node_gpu_hours{...,account}`` (burnin, quarantine, waiting,
  serving, unknown), ``bringup_node_failed_burnin_gpu_hours``,
  ``bringup_node_planned_to_serving_hours`` (accepted nodes only);
- ``bringup_unreadable_documents{node}``: evidence that could not be read (every node, 0
  when all is readable: a broken document is counted, never dropped);
- ``bringup_metrics_snapshot_timestamp_seconds``: when the snapshot was taken.

The collector adds ``bringup_metrics_last_reload_success`` (0 after a failed reload: the
previous snapshot is still served) and ``bringup_metrics_last_reload_timestamp_seconds``.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from bringup.insight.fleetdata import FleetData
from bringup.insight.ledger import ACCOUNTS, UNKNOWN, node_ledger
from bringup.lifecycle.engine import LifecycleError, State, parse_state

NODE_LABELS = ["node", "site", "rack", "pool", "sku"]
GPU_LABELS = ["node", "sku", "gpu", "serial"]
#: every verdict a run can show (:data:`bringup.acceptance.judge.VerdictStatus`, and fleetdata's own two)
VERDICTS = ("pass", "fail", "incomplete", "pending", "unreadable")
#: KEY_FIGURES with a number: (metric name, help); ``driver`` is a label of an info metric
KEY_FIGURE_METRICS = {
    "busbw_gbps": ("bringup_node_busbw_gbps", "NCCL all-reduce bus bandwidth of the last burn-in (GB/s)."),
    "max_temp_c": ("bringup_node_max_temp_celsius", "Hottest GPU temperature of the last burn-in (C)."),
    "gpus": ("bringup_node_burnin_gpus", "GPUs the last burn-in saw."),
}
GPU_METRICS = {
    "gflops": ("bringup_gpu_gflops", "gpu-burn Gflop/s of the GPU in the last burn-in."),
    "max_temp_c": ("bringup_gpu_max_temp_celsius", "The GPU's highest temperature in the last burn-in (C)."),
    "max_power_w": ("bringup_gpu_max_power_watts", "The GPU's highest power draw in the last burn-in (W)."),
}


def _num(v: Any) -> float | None:
    """A sample value, or None for what is missing or not a number (never a made-up 0)."""
    if v is None or isinstance(v, bool | str):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _stage(value: Any) -> str:
    try:
        return parse_state(value).value  # legacy names (admitted, judged) show as today's stage
    except LifecycleError:
        return str(value)  # shown as NetBox has it: a hand edit is visible, not hidden


def _last_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Each node's latest run, indexed by node."""
    if runs.empty:
        return runs.set_index("node")
    return runs.sort_values(["node", "run"], kind="stable").groupby("node", sort=False).tail(1).set_index("node")


def _node_families(fd: FleetData) -> tuple[list[Metric], dict[str, list[str]]]:
    """Stage, verdict, last burn-in and its key figures; and each node's label values."""
    stage = GaugeMetricFamily("bringup_node_stage", "1 for the node's current bring-up stage, 0 for the others.",
                              labels=[*NODE_LABELS, "stage"])
    verdict = GaugeMetricFamily("bringup_node_verdict", "1 for the verdict of the node's last burn-in, 0 for the "
                                "others (all 0 before the first).", labels=[*NODE_LABELS, "verdict"])
    last = GaugeMetricFamily("bringup_node_last_burnin_timestamp_seconds",
                             "When the node's last burn-in document was stored (unix time).", labels=NODE_LABELS)
    count = GaugeMetricFamily("bringup_node_burnin_runs", "Burn-ins on record for the node.", labels=NODE_LABELS)
    figures = {k: GaugeMetricFamily(name, help_, labels=NODE_LABELS) for k, (name, help_) in KEY_FIGURE_METRICS.items()}
    driver = GaugeMetricFamily("bringup_node_driver_info", "The GPU driver the last burn-in saw.",
                               labels=[*NODE_LABELS, "driver"])
    runs = fd.runs
    latest = _last_runs(runs)
    when = runs["burnin_at"].fillna(runs["judged_at"]) if not runs.empty else pd.Series(dtype="datetime64[ns, UTC]")
    last_at = when.groupby(runs["node"]).max() if not runs.empty else pd.Series(dtype=float)
    n_runs = runs.groupby("node").size() if not runs.empty else pd.Series(dtype=int)
    states = [s.value for s in State]
    labels: dict[str, list[str]] = {}
    for n in fd.nodes.itertuples(index=False):
        lv = [str(n.node), str(n.site), str(n.rack), str(n.pool), str(n.sku)]
        labels[lv[0]] = lv
        current = _stage(n.stage)
        for s in states if current in states else [*states, current]:
            stage.add_metric([*lv, s], 1.0 if s == current else 0.0)
        count.add_metric(lv, float(n_runs.get(lv[0], 0)))
        row = latest.loc[lv[0]] if lv[0] in latest.index else None
        for v in VERDICTS:
            verdict.add_metric([*lv, v], 1.0 if row is not None and row["verdict"] == v else 0.0)
        at = last_at.get(lv[0])
        if at is not None and not pd.isna(at):
            last.add_metric(lv, at.timestamp())
        if row is None:
            continue
        for k, fam in figures.items():
            if (v := _num(row[k])) is not None:
                fam.add_metric(lv, v)
        if isinstance(row["driver"], str) and row["driver"]:
            driver.add_metric([*lv, row["driver"]], 1.0)
    return [stage, verdict, last, count, *figures.values(), driver], labels


def _check_figures(fd: FleetData, labels: dict[str, list[str]]) -> Metric:
    """Every numeric check metric of each node's last burn-in (``nccl.busbw_largest_gbps``...)."""
    fam = GaugeMetricFamily("bringup_node_check_figure", "A numeric check metric of the node's last burn-in.",
                            labels=[*NODE_LABELS, "check", "metric"])
    if fd.figures.empty or fd.runs.empty:
        return fam
    last = fd.runs.groupby("node")["run"].max()
    fig = fd.figures[fd.figures["run"] == fd.figures["node"].map(last)]  # not an older run's figure
    cols = [c for c in fig.columns if c not in ("node", "run")]
    for row in fig.itertuples(index=False, name=None):
        lv = labels.get(row[0])
        if lv is None:
            continue
        for col, v in zip(cols, row[2:], strict=True):
            if (x := _num(v)) is not None:
                check, _, metric = col.partition(".")
                fam.add_metric([*lv, check, metric], x)
    return fam


def _gpu_families(fd: FleetData, labels: dict[str, list[str]]) -> list[Metric]:
    fams = {k: GaugeMetricFamily(name, help_, labels=GPU_LABELS) for k, (name, help_) in GPU_METRICS.items()}
    if fd.gpus.empty or fd.runs.empty:
        return list(fams.values())
    last = fd.runs.groupby("node")["run"].max()
    gpus = fd.gpus[fd.gpus["run"] == fd.gpus["node"].map(last)]
    for g in gpus.itertuples(index=False):
        lv = labels.get(g.node)
        if lv is None:
            continue
        gl = [lv[0], lv[4], str(g.gpu), "" if g.serial is None else str(g.serial)]
        for k, fam in fams.items():
            if (v := _num(getattr(g, k))) is not None:
                fam.add_metric(gl, v)
    return list(fams.values())


def _ledger_families(fd: FleetData, at: pd.Timestamp, labels: dict[str, list[str]],
                     accounts: dict[str, str] | None) -> list[Metric]:
    hours = GaugeMetricFamily("bringup_node_gpu_hours", "GPU-hours the node spent in each ledger account "
                              "(bringup/data/ledger.yaml), up to the snapshot.", labels=[*NODE_LABELS, "account"])
    failed = GaugeMetricFamily("bringup_node_failed_burnin_gpu_hours",
                               "GPU-hours of the node's burn-ins that ended in quarantine.", labels=NODE_LABELS)
    to_serving = GaugeMetricFamily("bringup_node_planned_to_serving_hours",
                                   "Hours from the node's first stage on record to its first hour serving.",
                                   labels=NODE_LABELS)
    # the price does not change hours; 0 keeps settings out of the metrics
    led = node_ledger(fd.nodes, fd.stages, at, 0.0, accounts)
    for node, r in led.iterrows():
        lv = labels.get(str(node))
        if lv is None:
            continue
        gpus = float(r["gpus"])
        for a in ACCOUNTS:
            hours.add_metric([*lv, a], float(r[f"{a}_gpu_h"]))
        hours.add_metric([*lv, UNKNOWN], float(r[f"{UNKNOWN}_h"]) * gpus)
        failed.add_metric(lv, float(r["failed_burnin_gpu_h"]))
        if (v := _num(r["planned_to_serving_h"])) is not None:
            to_serving.add_metric(lv, v)
    return [hours, failed, to_serving]


def _unreadable(fd: FleetData, labels: dict[str, list[str]]) -> Metric:
    fam = GaugeMetricFamily("bringup_unreadable_documents",
                            "Evidence documents of the node that could not be read (see `bringup report`).",
                            labels=["node"])
    per = fd.findings.groupby("node").size() if not fd.findings.empty else pd.Series(dtype=int)
    for node in sorted(set(labels) | {str(n) for n in per.index}):  # a finding's node is never lost
        fam.add_metric([node], float(per.get(node, 0)))
    return fam


def families(fd: FleetData, at: pd.Timestamp, accounts: dict[str, str] | None = None) -> list[Metric]:
    """Every metric of the fleet at ``at`` (tz-aware: the ledger counts hours up to it)."""
    nodes, labels = _node_families(fd)
    taken = GaugeMetricFamily("bringup_metrics_snapshot_timestamp_seconds", "When this snapshot was taken (unix time).",
                              value=pd.Timestamp(at).timestamp())
    return [*nodes, _check_figures(fd, labels), *_gpu_families(fd, labels),
            *_ledger_families(fd, at, labels, accounts), _unreadable(fd, labels), taken]


class FleetCollector(Collector):
    """Serves the last snapshot's families; a reload swaps them whole (under a lock), so a
    scrape never mixes two snapshots."""

    def __init__(self, snapshot: Iterable[Metric] = ()) -> None:
        self._lock = threading.Lock()
        self._families = list(snapshot)
        self._ok = bool(self._families)
        self._reloaded_at: float | None = None

    def update(self, snapshot: Iterable[Metric], at: float) -> None:
        snapshot = list(snapshot)
        with self._lock:
            self._families, self._ok, self._reloaded_at = snapshot, True, at

    def failed(self) -> None:
        """A reload failed: keep serving the last snapshot, and say so."""
        with self._lock:
            self._ok = False

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            fams, ok, at = self._families, self._ok, self._reloaded_at
        yield from fams
        yield GaugeMetricFamily("bringup_metrics_last_reload_success",
                                "1 if the last reload from NetBox worked; 0: the snapshot served is older.",
                                value=1.0 if ok else 0.0)
        if at is not None:
            yield GaugeMetricFamily("bringup_metrics_last_reload_timestamp_seconds",
                                    "When the snapshot served was loaded (unix time).", value=at)


def registry_of(collector: Collector) -> CollectorRegistry:
    """A registry with only this collector (no process or Python metrics: they describe
    the exporter, not the fleet)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return reg


def write_textfile(path: Path, registry: CollectorRegistry) -> None:
    """The node_exporter textfile: rendered first, written to a temporary file beside
    ``path``, then renamed over it, so the collector never reads half a file."""
    text = generate_latest(registry)  # a failure here leaves the old file and no temp file
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from node_exporter's user
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
