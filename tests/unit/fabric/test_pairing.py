"""Pairing: disjoint in-rack pairs, odd ones out, cross-rack and ring modes."""

import pytest

from bringup.errors import ConfigError
from bringup.fabric.models import FabricNode
from bringup.fabric.pairing import plan_pairs


def nodes(*racks: int) -> list[FabricNode]:
    return [FabricNode(name=f"r{r}n{i:02d}", rack=f"r{r}") for r, count in enumerate(racks) for i in range(count)]


def test_rack_mode_disjoint_pairs_within_racks():
    p = plan_pairs(nodes(4, 4))
    assert p.pairs == [("r0n00", "r0n01"), ("r0n02", "r0n03"), ("r1n00", "r1n01"), ("r1n02", "r1n03")]
    assert p.notes == []


def test_odd_racks_pair_their_leftovers_across_racks_and_say_why():
    p = plan_pairs(nodes(3, 3))
    assert p.pairs[-1] == ("r0n02", "r1n02") and "across racks" in p.notes[0]
    names = [n for pair in p.pairs for n in pair]
    assert len(names) == len(set(names)) == 6  # everyone exactly once


def test_pool_odd_one_out_pairs_again_in_its_own_rack():
    p = plan_pairs(nodes(3))
    assert p.pairs == [("r0n00", "r0n01"), ("r0n02", "r0n00")]
    assert "inside rack r0" in p.notes[0]


def test_cross_rack_and_ring():
    p = plan_pairs(nodes(2, 2), mode="cross_rack")
    assert all(a[:2] != b[:2] for a, b in p.pairs)
    ring = plan_pairs(nodes(4), mode="ring")
    assert len(ring.pairs) == 4 and ring.pairs[-1] == ("r0n03", "r0n00")
    with pytest.raises(ConfigError, match="ring"):
        plan_pairs(nodes(40), mode="ring")


def test_deterministic_whatever_the_input_order():
    assert plan_pairs(list(reversed(nodes(5, 3, 2)))) == plan_pairs(nodes(5, 3, 2))
