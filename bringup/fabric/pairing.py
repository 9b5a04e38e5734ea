"""Which nodes test together in the first round of the fabric test.

- ``rack`` (default): disjoint pairs inside each rack, so every node runs once and a
  failure is first looked for on the rack's own leaf. Racks with an odd count leave one
  node each; those are paired *across racks* with each other (rack order), because that
  keeps every node in exactly one test (n/2 tests, one wave) where pairing them again
  inside their rack would run their partner twice. If the pool's total is odd, the last
  one left is paired with a node of *its own rack* again (that partner runs twice, in a
  second wave): same-rack keeps it on the path rack mode tests; a rack of one borrows the
  first node of the next rack.
- ``cross_rack``: nodes taken round-robin over racks, consecutive ones paired, so pairs
  cross racks (and spine paths) wherever more than one rack still has nodes.
- ``ring``: node i with node i+1 around the pool: every node in two tests, n tests. Only
  for small pools (``max_ring``), where two partners per node speed up localisation.

Deterministic: nodes are ordered by (rack, name), whatever order they come in.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from bringup.errors import ConfigError
from bringup.fabric.models import FabricNode
from bringup.lifecycle.results import interleave_by

Mode = Literal["rack", "cross_rack", "ring"]


class Pairing(BaseModel):
    mode: Mode
    pairs: list[tuple[str, str]]
    notes: list[str] = Field(default_factory=list)


def _ordered(nodes: list[FabricNode]) -> list[FabricNode]:
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise ConfigError("the fabric pool names a node twice", hint="pass each node once")
    return sorted(nodes, key=lambda n: (n.rack, n.name))


def plan_pairs(nodes: list[FabricNode], mode: Mode = "rack", max_ring: int = 32) -> Pairing:
    ordered = _ordered(nodes)
    if len(ordered) < 2:
        return Pairing(mode=mode, pairs=[], notes=["fewer than two nodes: no pair test possible"])
    if mode == "ring":
        return _ring(ordered, max_ring)
    if mode == "cross_rack":
        return _cross_rack(ordered)
    return _rack(ordered)


def _ring(ordered: list[FabricNode], max_ring: int) -> Pairing:
    if len(ordered) > max_ring:
        raise ConfigError(f"a ring of {len(ordered)} nodes runs {len(ordered)} tests; ring mode is for "
                          f"pools up to {max_ring}", hint="use rack or cross_rack pairing")
    if len(ordered) == 2:
        return Pairing(mode="ring", pairs=[(ordered[0].name, ordered[1].name)])
    pairs = [(ordered[i].name, ordered[(i + 1) % len(ordered)].name) for i in range(len(ordered))]
    return Pairing(mode="ring", pairs=pairs)


def _rack(ordered: list[FabricNode]) -> Pairing:
    racks: dict[str, list[FabricNode]] = {}
    for n in ordered:
        racks.setdefault(n.rack, []).append(n)
    pairs: list[tuple[str, str]] = []
    notes: list[str] = []
    left: list[FabricNode] = []
    for members in racks.values():
        for i in range(0, len(members) - 1, 2):
            pairs.append((members[i].name, members[i + 1].name))
        if len(members) % 2:
            left.append(members[-1])
    for i in range(0, len(left) - 1, 2):
        a, b = left[i], left[i + 1]
        pairs.append((a.name, b.name))
        notes.append(f"{a.name} (rack {a.rack}) and {b.name} (rack {b.rack}) are their racks' odd ones out: "
                     "paired across racks so that no node runs twice")
    if len(left) % 2:
        last = left[-1]
        mates = [n for n in racks[last.rack] if n.name != last.name]
        if mates:
            notes.append(f"{last.name} is the pool's odd one out: paired again inside rack {last.rack} with "
                         f"{mates[0].name} (same-rack path; {mates[0].name} runs twice)")
        else:
            mates = [n for n in ordered if n.name != last.name]
            notes.append(f"{last.name} is alone in rack {last.rack}: paired across racks with {mates[0].name} "
                         f"({mates[0].name} runs twice)")
        pairs.append((last.name, mates[0].name))
    return Pairing(mode="rack", pairs=pairs, notes=notes)


def _cross_rack(ordered: list[FabricNode]) -> Pairing:
    seq = interleave_by(ordered, key=lambda n: n.rack)
    pairs: list[tuple[str, str]] = []
    notes: list[str] = []
    for i in range(0, len(seq) - 1, 2):
        a, b = seq[i], seq[i + 1]
        pairs.append((a.name, b.name))
        if a.rack == b.rack:
            notes.append(f"{a.name} and {b.name} share rack {a.rack}: no other rack had nodes left")
    if len(seq) % 2:
        last, mate = seq[-1], next(n for n in seq if n.rack != seq[-1].rack) if len(
            {n.rack for n in seq}) > 1 else seq[0]
        pairs.append((last.name, mate.name))
        notes.append(f"{last.name} is the pool's odd one out: paired again with {mate.name} "
                     f"({mate.name} runs twice)")
    return Pairing(mode="cross_rack", pairs=pairs, notes=notes)
