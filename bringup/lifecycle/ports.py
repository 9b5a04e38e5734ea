"""The ports the lifecycle engine (:mod:`bringup.lifecycle.engine`) is handed: where node records
live, and what a step function is. NetBox implements :class:`Records` in production
(:class:`bringup.netbox.records.NetBoxRecords`); the benchmark and the unit tests bring their own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from bringup.lifecycle.results import Evidence, NodeReport, StepResult
from bringup.netbox import lease as leases


class Records(Protocol):
    """Where node records live (NetBox in production: :class:`bringup.netbox.records.NetBoxRecords`)."""

    def node(self, name: str) -> Any: ...
    # many nodes' records in one read, and their verdicts' figures (name -> figures) in few
    def node_list(self, names: list[str]) -> list[Any]: ...
    def verdict_figures(self, nodes: list[Any]) -> dict[str, dict[str, Any]]: ...
    def write(self, node: Any, *, stage: str | None = None, status: str | None = None,
              fields: dict[str, Any] | None = None, add_tags: tuple[str, ...] = (),
              remove_tags: tuple[str, ...] = ()) -> bool | None: ...
    # (write returns True when the record now holds what NetBox answered the write, lease
    # included: the lifecycle then takes it as current for a few seconds instead of reading)
    def journal(self, node: Any, text: str, kind: str = "info") -> None: ...
    def put_evidence(self, node: Any, evidence: list[Evidence]) -> dict[str, Any]: ...
    # figures: the verdict's figures when the caller has them (else read from the evidence)
    def report(self, node: Any, verdict: str, figures: dict[str, Any] | None = None) -> NodeReport: ...
    # the node's changing part (stage, custom fields, status, tags) brought up to date in
    # place, returning its lease as read: what the fence judges
    def refresh(self, node: Any) -> Any: ...
    # the node's lease (see bringup.netbox.lease): each one compare-and-swap
    def lease(self, node: Any) -> Any: ...
    def claim(self, node: Any, me: leases.Claimant, ttl: float,
              ended: Callable[[str], bool] | None = None) -> leases.LeaseHeld | None: ...
    def renew(self, node: Any, holder: str, ttl: float) -> str | None: ...
    def release(self, node: Any, holder: str) -> None: ...


#: a step function: (node record, run parameters) -> result
StepFn = Callable[[Any, Mapping[str, Any]], StepResult]
