"""Splitting a run into child runs: whole racks, balanced, never more groups than racks."""

from __future__ import annotations

from bringup.stages.select import Selected
from flows.batches import split


def nodes(spec: dict[str, int]) -> list[Selected]:
    return [Selected(f"{rack}-n{i}", rack, "planned") for rack, n in spec.items() for i in range(n)]


def test_racks_stay_whole_and_groups_balance():
    groups = split(nodes({"r1": 16, "r2": 16, "r3": 8, "r4": 8}), 2)
    assert len(groups) == 2
    assert sorted(len(g) for g in groups) == [24, 24]
    for g in groups:
        racks = {s.rack for s in g}
        assert all(sum(1 for s in g if s.rack == r) == {"r1": 16, "r2": 16, "r3": 8, "r4": 8}[r] for r in racks)


def test_never_more_groups_than_racks_and_nothing_lost():
    sel = nodes({"r1": 3, "r2": 1})
    groups = split(sel, 8)
    assert len(groups) == 2
    assert sorted(s.name for g in groups for s in g) == sorted(s.name for s in sel)
    assert split([], 3) == []
