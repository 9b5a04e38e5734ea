"""What a lifecycle step returns, and a node's end state for the fleet table.

Plain values: a step that finds the node unfit returns ``ok=False`` with its reasons;
it never raises for that. The lifecycle (:mod:`bringup.lifecycle.engine`) turns results into
NetBox writes; flows tabulate them; nothing here does I/O.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Evidence(BaseModel):
    """A document a step produced, to be kept where any worker can read it again."""

    kind: str                       # discovery, bios, install, configure, burnin, verdict...
    document: Any
    summary: str = ""               # markdown people read in NetBox's journal
    style: str = "info"             # journal kind: info | success | warning | danger


class StepResult(BaseModel):
    """The result of one step of one node.

    ``ok=False`` means the node is unfit (the lifecycle quarantines it with ``reasons``).
    ``fields`` are NetBox custom fields to set; ``evidence`` documents to keep.
    ``state`` is filled in by the lifecycle: the node's state after this step.
    """

    node: str
    step: str
    ok: bool
    skipped: bool = False
    summary: str = ""
    reasons: list[str] = Field(default_factory=list)
    figures: dict[str, Any] = Field(default_factory=dict)
    fields: dict[str, Any] = Field(default_factory=dict)
    evidence: list[Evidence] = Field(default_factory=list)
    state: str = ""

    @property
    def failed(self) -> bool:
        return not self.ok and not self.skipped


class NodeReport(BaseModel):
    """The end state of one node after a run: one row of the fleet table."""

    node: str
    rack: str = ""
    verdict: str                      # admitted | quarantined | pending | held
    stage: str
    reasons: list[str] = Field(default_factory=list)
    figures: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    netbox_url: str = ""


def interleave_by(items: list, key) -> list:
    """Round-robin over groups (racks): the first item of every group, then the second...

    Nodes queue for OS installs in this order. Taking a whole rack first would leave the
    last racks' burn-in slots (a per-rack limit) idle until late, and make the run longer
    than the install and burn-in limits require.
    """
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    out = []
    queues = list(groups.values())
    for i in range(max((len(q) for q in queues), default=0)):
        out.extend(q[i] for q in queues if i < len(q))
    return out
