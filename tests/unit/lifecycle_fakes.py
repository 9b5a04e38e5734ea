"""An in-memory stand-in for the lifecycle's Records port (NetBox in production), for
unit tests of the engine and the flows' walk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bringup.errors import PreconditionFailed
from bringup.lifecycle.results import NodeReport
from bringup.netbox import lease as leases
from bringup.netbox.evidence import EvidenceStore, Ref


@dataclass
class FakeNode:
    name: str
    stage: str = "planned"
    status: str = "planned"
    rack: str = "r1"
    url: str = ""
    custom_fields: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    journal: list[tuple[str, str]] = field(default_factory=list)


class MemoryRecords(leases.LeaseOps):
    def __init__(self, *names: str) -> None:
        # each a device of one NetBox, as a record read from it names (a spooled result is the device's)
        self.nodes = {n: FakeNode(n, url=f"http://netbox.test/dcim/devices/{i}/") for i, n in enumerate(names, 1)}
        self.writes: list[tuple[str, dict[str, Any]]] = []
        self.evidence: dict[str, dict[str, Any]] = {}
        #: each node's version (NetBox's ETag): every write moves it on
        self.versions: dict[str, int] = dict.fromkeys(names, 0)
        #: called between a compare-and-swap's read and its write (a test's rival run)
        self.between: Any = None
        self.conflicts = 0
        self.refreshes = 0

    def node(self, name: str) -> FakeNode:
        n = self.nodes[name]
        # a copy, as a fresh read from NetBox would be
        return FakeNode(n.name, n.stage, n.status, n.rack, n.url, dict(n.custom_fields), list(n.tags))

    def node_list(self, names: list[str]) -> list[FakeNode]:
        self.many_reads = getattr(self, "many_reads", 0) + 1
        return [MemoryRecords.node(self, n) for n in names]   # one read, not one per node

    def verdict_figures(self, nodes) -> dict[str, dict[str, Any]]:
        return {n.name: dict(self.evidence[n.name]["verdict"].get("figures") or {})
                for n in nodes if "verdict" in self.evidence.get(n.name, {})}

    def write(self, node, *, stage=None, status=None, fields=None, add_tags=(), remove_tags=()) -> None:
        n = self.nodes[node.name]
        self.writes.append((node.name, {"stage": stage, "status": status, "fields": dict(fields or {})}))
        if stage:
            n.stage = stage
            node.stage = stage
        if status:
            n.status = status
        n.custom_fields.update(fields or {})
        node.custom_fields.update(fields or {})
        n.tags = sorted((set(n.tags) | set(add_tags)) - set(remove_tags))
        self.versions[node.name] += 1

    def journal(self, node, text: str, kind: str = "info") -> None:
        self.nodes[node.name].journal.append((kind, text))

    def put_evidence(self, node, evidence) -> dict[str, Any]:
        refs = []
        for e in evidence:
            self.evidence.setdefault(node.name, {})[e.kind] = e.document
            refs.append(Ref(e.kind, (len(self.writes),), "sha", 1, "now"))
        return EvidenceStore.index_update(node.custom_fields, refs)

    def report(self, node, verdict: str, figures=None) -> NodeReport:
        reason = str(node.custom_fields.get("bringup_reason") or "")
        if verdict == "pending" and reason.startswith("held in"):  # as bringup.netbox.records does
            verdict = "held"
        return NodeReport(node=node.name, rack=node.rack, verdict=verdict, stage=node.stage,
                          reasons=[r for r in reason.split("; ") if r], figures=dict(figures or {}))

    def refresh(self, node) -> Any:
        """As NetBoxRecords.refresh: the changing part brought up to date in place."""
        self.refreshes += 1
        n = self.nodes[node.name]
        node.stage, node.status, node.tags = n.stage, n.status, list(n.tags)
        node.custom_fields = dict(n.custom_fields)
        return n.custom_fields.get(leases.FIELD)

    # --- the lease, by compare-and-swap on the node's version, as NetBox's If-Match ---------
    def lease(self, node) -> Any:
        return self.nodes[node.name].custom_fields.get(leases.FIELD)

    def _cas(self, node, change):
        name = node.name

        def read():
            return str(self.versions[name]), self.lease(node)

        def write(version, new):
            if self.between is not None:
                self.between(name)
            if version != str(self.versions[name]):
                self.conflicts += 1
                raise PreconditionFailed(f"{name} changed since version {version}")
            self.nodes[name].custom_fields[leases.FIELD] = new
            self.versions[name] += 1
        return leases.cas(read, write, change)
