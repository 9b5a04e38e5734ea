"""Fabric thresholds from ``bringup/data/fabric.yaml``: per-rail RDMA bandwidth per SKU and
IB port counter growth limits, judged with the fixed operators of
:mod:`bringup.acceptance.thresholds` (never ``eval``). A judgement is a value, not an exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from bringup.acceptance.thresholds import OPERATORS, Op
from bringup.errors import ConfigError
from bringup.fabric.models import Outcome
from bringup.fabric.perftest import PerftestResult
from bringup.resources import data_file
from bringup.yamlio import load_file, validation_error


class Limit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: Op
    value: Any

    def holds(self, actual: Any) -> bool:
        return bool(OPERATORS[self.op](actual, self.value))


class FabricThresholds(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str
    min_rdma_gbps: float
    #: the multi-node all_reduce_perf figure a pair must reach (GB/s, largest sizes)
    min_busbw_gbps: float = 340.0
    rdma_message_bytes_min: int = 65536
    counters: dict[str, Limit]


class RailJudgement(BaseModel):
    rail: str
    outcome: Outcome
    avg_gbps: float | None = None
    limit_gbps: float
    message: str


def load_fabric_thresholds(sku: str, path: Path | None = None) -> FabricThresholds:
    path = path or data_file("fabric.yaml")
    doc = load_file(path)
    data = doc.data or {}
    skus = data.get("skus") or {}
    if sku not in skus:
        raise ConfigError(f"{path}: no fabric thresholds for SKU {sku!r}; known: {', '.join(sorted(skus))}",
                          hint=f"add skus.{sku}.min_rdma_gbps")
    merged = {**(data.get("defaults") or {}), **skus[sku], "sku": sku}
    try:
        return FabricThresholds.model_validate(merged)
    except ValidationError as exc:
        raise validation_error(exc, doc, "fabric thresholds file") from None


def judge_rail(rail: str, result: PerftestResult | None, th: FabricThresholds) -> RailJudgement:
    """A rail passes when its largest message's average clears the SKU's limit. No result
    (the parser refused it, the test did not run) or too small a message is unknown."""
    if result is None or not result.rows:
        return RailJudgement(rail=rail, outcome="unknown", limit_gbps=th.min_rdma_gbps,
                             message=f"{rail}: no ib_write_bw result")
    row = result.largest
    if row.bytes < th.rdma_message_bytes_min:
        return RailJudgement(rail=rail, outcome="unknown", avg_gbps=row.avg_gbps, limit_gbps=th.min_rdma_gbps,
                             message=f"{rail}: largest message {row.bytes} B is below "
                             f"{th.rdma_message_bytes_min} B; bandwidth not judged")
    ok = Limit(op=">=", value=th.min_rdma_gbps).holds(row.avg_gbps)
    return RailJudgement(rail=rail, outcome="pass" if ok else "fail", avg_gbps=row.avg_gbps,
                         limit_gbps=th.min_rdma_gbps,
                         message=f"{rail}: {row.avg_gbps:.2f} Gb/s at {row.bytes} B "
                         f"({'>=' if ok else '<'} {th.min_rdma_gbps:g})")
