"""Typed values of the fabric stage: nodes, pair results and findings.

A pair test between two nodes has three outcomes. ``unknown`` (the test did not run to the
end, its output could not be read, a rail is missing) is never counted as a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["pass", "fail", "unknown"]
FindingKind = Literal["node", "link", "unknown", "flapping_link"]


class FabricNode(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    rack: str


class PairResult(BaseModel):
    """One test between ``a`` and ``b``. ``rails`` (per-NIC outcomes, e.g. ``{"mlx5_0":
    "pass"}``) is optional: present where a per-rail test ran."""

    a: str
    b: str
    outcome: Outcome
    rails: dict[str, Outcome] = Field(default_factory=dict)
    detail: str = ""

    def has(self, node: str) -> bool:
        return node in (self.a, self.b)

    def other(self, node: str) -> str:
        return self.b if node == self.a else self.a


class FabricFinding(BaseModel):
    """Who is blamed and on what evidence. ``kind`` node: the node fails with two distinct
    known-good partners; link: both nodes pass with others but fail together; unknown: not
    enough evidence to blame or clear (never a pass); flapping_link: port counters grew."""

    kind: FindingKind
    nodes: list[str]
    message: str
    rails: list[str] = Field(default_factory=list)
    hca: str | None = None
    port: int | None = None
    evidence: list[PairResult] = Field(default_factory=list)


def best_busbw(doc: Mapping[str, Any]) -> float | None:
    """The best bus bandwidth among a node document's passing pairs (None: no such pair)."""
    return max((p["busbw_gbps"] for p in doc.get("pairs") or [] if isinstance(p.get("busbw_gbps"), (int, float))
                and p.get("outcome") == "pass"), default=None)
