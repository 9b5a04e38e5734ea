"""Burn-in thresholds per SKU, from ``bringup/data/thresholds.yaml``, and the fixed set of
operators the judge evaluates them with (never ``eval``)."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.acceptance.peers import PeerPolicy
from bringup.errors import ConfigError
from bringup.resources import data_file
from bringup.sku import SkuSpec
from bringup.yamlio import load_file, validation_error

DEFAULT_PATH = data_file("thresholds.yaml")

Op = Literal[">=", "<=", "==", "!=", ">", "<", "in", "not_in", "disjoint"]


def _disjoint(a: Any, b: Any) -> bool:
    return not set(a if isinstance(a, list | tuple | set) else [a]) & set(b)


OPERATORS = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
    "<": operator.lt, "in": lambda a, b: a in b, "not_in": lambda a, b: a not in b, "disjoint": _disjoint,
}


class Rule(BaseModel):
    """``metric`` of ``check`` must satisfy ``op`` against ``value`` or a named threshold."""

    model_config = ConfigDict(extra="forbid")
    check: str
    metric: str
    op: Op
    threshold: str | None = None
    value: Any = None
    code: str
    #: the metric may legitimately be absent (e.g. #wrong in the old nccl-tests layout)
    optional: bool = False
    #: a roll-up of the check's own findings: only judged when the check itself passed
    summary: bool = False

    def limit(self, values: dict[str, Any]) -> Any:
        return values.get(self.threshold) if self.threshold else self.value

    def holds(self, actual: Any, values: dict[str, Any]) -> bool:
        return bool(OPERATORS[self.op](actual, self.limit(values)))


class ThresholdsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fatal_xids: list[int]
    defaults: dict[str, Any]
    skus: dict[str, dict[str, Any]]
    rules: list[Rule]
    #: peers and baselines (bringup.acceptance.peers); absent: its defaults
    peers: PeerPolicy = Field(default_factory=PeerPolicy)


class SkuThresholds(BaseModel):
    """Everything the judge needs for one SKU: values by name, rules, required checks."""

    model_config = ConfigDict(extra="forbid")
    sku: str
    values: dict[str, Any]
    rules: list[Rule]
    required_checks: list[str] = Field(default_factory=list)
    peers: PeerPolicy = Field(default_factory=PeerPolicy)

    def value(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)


def load_thresholds_file(path: Path = DEFAULT_PATH) -> ThresholdsFile:
    doc = load_file(path)
    try:
        tf = ThresholdsFile.model_validate(doc.data or {})
    except ValidationError as exc:
        raise validation_error(exc, doc, "thresholds file") from None
    return tf


def thresholds_for(sku: SkuSpec, path: Path = DEFAULT_PATH) -> SkuThresholds:
    """Merge defaults, the SKU's overrides and the SKU's own expectations (GPU count, PCIe,
    IB ports and rate from NetBox's config context) into one :class:`SkuThresholds`."""
    tf = load_thresholds_file(path)
    if sku.sku not in tf.skus:
        raise ConfigError(f"{path}: no thresholds for SKU {sku.sku!r}; known: {', '.join(sorted(tf.skus))}",
                          hint=f"add a skus.{sku.sku} entry with at least min_busbw_gbps")
    values: dict[str, Any] = dict(tf.defaults)
    values.update(tf.skus[sku.sku])
    values.update({
        "fatal_xids": tf.fatal_xids, "gpu_count": sku.gpu.count, "gpu_name": sku.gpu.model,
        "memory_mib": sku.gpu.memory_mib, "pcie_gen": sku.gpu.pcie_gen, "pcie_width": sku.gpu.pcie_width,
        "nvlink_links": sku.gpu.nvlink_links, "ecc": sku.gpu.ecc, "ib_ports": sku.nics.compute,
        "ib_rate_gbps": sku.nics.compute_speed_gbps,
    })
    required = list(values.pop("required_checks", []))
    missing = sorted({r.threshold for r in tf.rules if r.threshold and r.threshold not in values})
    if missing:
        raise ConfigError(f"{path}: rules name thresholds that SKU {sku.sku} does not define: {', '.join(missing)}",
                          hint="add them under defaults or the SKU")
    return SkuThresholds(sku=sku.sku, values=values, rules=tf.rules, required_checks=required, peers=tf.peers)
