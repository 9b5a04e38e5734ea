"""The guide's normalised cost of a pool (issue #28, item 2): (compute + network + storage +
support + idle + failed runs + operations) / accepted workload units, each term with its
source. Pure: a row of :func:`bringup.insight.ledger.pool_ledger`, the rates and the pool's
accepted throughput in, terms and the figure out.

- compute: serving GPU-hours x ``gpu_hour_usd`` (settings);
- idle: waiting GPU-hours (planned, discovered, validating, draining) x ``gpu_hour_usd``;
- failed runs: quarantine GPU-hours and the burn-ins that ended in quarantine x ``gpu_hour_usd``;
- operations: the other burn-in GPU-hours (bring-up work) x ``gpu_hour_usd``;
- network, storage, support: every GPU-hour x ``rates.<term>`` of ``bringup/data/ledger.yaml``.

Accepted workload units: the pool's accepted throughput (its latest *passed* acceptance,
samples/s per node: the run's samples/s over the nodes that ran it) x the pool's serving
node-hours x 3600, in millions of samples. A pool with no passed acceptance has no accepted
units: its normalised cost is unknown (None), never a figure over nothing.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bringup.resources import data_file
from bringup.yamlio import load_file

TERMS = ("compute", "network", "storage", "support", "idle", "failed runs", "operations")


class Term(BaseModel):
    name: str
    usd: float
    source: str


class UnitCost(BaseModel):
    pool: str
    terms: list[Term]
    total_usd: float
    accepted_units_m: float | None       # millions of samples
    usd_per_m_units: float | None
    units_source: str


def load_rates(path: Path | None = None) -> dict[str, float]:
    """``rates`` of the ledger file (network, storage, support; missing ones are 0)."""
    from bringup.insight.ledger import LedgerFile  # the ledger file's one schema
    doc = load_file(path or data_file("ledger.yaml"))
    return dict(LedgerFile.model_validate(doc.data or {}).rates)


def _f(row: Any, key: str) -> float:
    v = float(row.get(key, 0.0) or 0.0)
    return 0.0 if math.isnan(v) else v


def unit_cost(pool: str, row: Any, gpu_hour_usd: float, rates: dict[str, float],
              samples_per_s_per_node: float | None, accepted_from: str = "") -> UnitCost:
    """The terms and the normalised cost of one pool's ledger row."""
    p = f"settings gpu_hour_usd {gpu_hour_usd:g} $"
    failed = _f(row, "quarantine_gpu_h") + _f(row, "failed_burnin_gpu_h")
    ops = max(_f(row, "burnin_gpu_h") - _f(row, "failed_burnin_gpu_h"), 0.0)
    gpu_h = _f(row, "gpu_h")
    terms = [Term(name="compute", usd=_f(row, "serving_gpu_h") * gpu_hour_usd,
                  source=f"ledger serving {_f(row, 'serving_gpu_h'):,.1f} GPU-h x {p}")]
    for name in ("network", "storage", "support"):
        rate = float(rates.get(name, 0.0))
        terms.append(Term(name=name, usd=gpu_h * rate,
                          source=f"ledger all {gpu_h:,.1f} GPU-h x ledger.yaml rates.{name} {rate:g} $"))
    terms += [Term(name="idle", usd=_f(row, "waiting_gpu_h") * gpu_hour_usd,
                   source=f"ledger waiting {_f(row, 'waiting_gpu_h'):,.1f} GPU-h x {p}"),
              Term(name="failed runs", usd=failed * gpu_hour_usd,
                   source=f"ledger quarantine + failed burn-in {failed:,.1f} GPU-h x {p}"),
              Term(name="operations", usd=ops * gpu_hour_usd,
                   source=f"ledger burn-in (not failed) {ops:,.1f} GPU-h x {p}")]
    total = sum(t.usd for t in terms)
    serving_node_h = _f(row, "serving_h")
    if samples_per_s_per_node is None:
        units, per, src = None, None, "no passed pool acceptance: accepted units unknown"
    else:
        units = samples_per_s_per_node * serving_node_h * 3600 / 1e6
        per = total / units if units else None
        src = (f"pool acceptance {accepted_from} {samples_per_s_per_node:,.1f} samples/s per node x "
               f"ledger serving {serving_node_h:,.1f} node-h")
    return UnitCost(pool=pool, terms=terms, total_usd=total, accepted_units_m=units, usd_per_m_units=per,
                    units_source=src)


__all__ = ["TERMS", "Term", "UnitCost", "load_rates", "unit_cost"]
