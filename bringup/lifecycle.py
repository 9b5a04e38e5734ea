"""The bring-up lifecycle as pure data: stages, what each run still has to do, and the
outcome of one stage for one node.

NetBox's ``bringup_stage`` custom field is the durable record of how far a node got;
a rerun reads it and resumes after the last completed stage. ``quarantined`` is
terminal until an operator forces a rerun.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

#: the happy path, in order; each name is the stage a node is *in* once that step is done
PIPELINE = ("discovered", "provisioned", "burned_in", "judged", "recorded", "admitted")
ORDER = ("planned",) + PIPELINE
TERMINAL = {"admitted", "quarantined"}


def remaining(current: str, *, force: bool = False, until: str = "admitted") -> list[str]:
    """Stages still to run for a node whose NetBox stage is ``current``.

    A quarantined node needs ``force`` (an operator decision) and then starts over; so
    does a forced rerun of an admitted node. Unknown stages are an error, not a guess.
    """
    if current not in ORDER and current != "quarantined":
        raise ValueError(f"unknown bring-up stage {current!r}")
    stop = PIPELINE.index(until) + 1
    if force or current == "planned":
        return list(PIPELINE[:stop])
    if current == "quarantined":
        return []
    done = ORDER.index(current)
    return list(PIPELINE[done:stop])


class Outcome(BaseModel):
    """What one stage did to one node; flows return these, artifacts tabulate them."""

    node: str
    stage: str
    ok: bool
    skipped: bool = False
    summary: str = ""
    reasons: list[str] = Field(default_factory=list)
    figures: dict[str, Any] = Field(default_factory=dict)
    evidence: dict[str, Any] = Field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return not self.ok and not self.skipped


class NodeReport(BaseModel):
    """The end state of one node after a commission run: one row of the fleet table."""

    node: str
    rack: str = ""
    verdict: str                      # admitted | quarantined | pending | skipped
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
