"""An in-memory stand-in for the lifecycle's Records port (NetBox in production), for
unit tests of the engine and the flows' walk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bringup.evidence import EvidenceStore, Ref
from bringup.results import NodeReport


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


class MemoryRecords:
    def __init__(self, *names: str) -> None:
        self.nodes = {n: FakeNode(n) for n in names}
        self.writes: list[tuple[str, dict[str, Any]]] = []
        self.evidence: dict[str, dict[str, Any]] = {}

    def node(self, name: str) -> FakeNode:
        n = self.nodes[name]
        # a copy, as a fresh read from NetBox would be
        return FakeNode(n.name, n.stage, n.status, n.rack, n.url, dict(n.custom_fields), list(n.tags))

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

    def journal(self, node, text: str, kind: str = "info") -> None:
        self.nodes[node.name].journal.append((kind, text))

    def put_evidence(self, node, evidence) -> dict[str, Any]:
        refs = []
        for e in evidence:
            self.evidence.setdefault(node.name, {})[e.kind] = e.document
            refs.append(Ref(e.kind, (len(self.writes),), "sha", 1, "now"))
        return EvidenceStore.index_update(node.custom_fields, refs)

    def report(self, node, verdict: str) -> NodeReport:
        reason = str(node.custom_fields.get("bringup_reason") or "")
        return NodeReport(node=node.name, rack=node.rack, verdict=verdict, stage=node.stage,
                          reasons=[r for r in reason.split("; ") if r])
