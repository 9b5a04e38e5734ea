"""Splitting a run into child runs: whole racks, balanced, never more groups than racks."""

from __future__ import annotations

from bringup.lifecycle.select import Selected
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


def test_the_parent_learns_which_nodes_a_child_skipped_as_held_and_why():
    import json

    from flows.batches import held_reasons
    rows = [{"node": "a", "verdict": "admitted", "reasons": "-"},
            {"node": "b", "verdict": "held", "reasons": "node b is held by run r2 on ctl-2: skipped"},
            {"verdict": "held"},  # no node: nothing to attribute
            "odd"]
    assert held_reasons(json.dumps(rows)) == {"b": ["node b is held by run r2 on ctl-2: skipped"]}
    assert held_reasons(rows) == held_reasons(json.dumps(rows))
    assert held_reasons(None) == {} and held_reasons("[]") == {}
