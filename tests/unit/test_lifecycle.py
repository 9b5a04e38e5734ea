"""The pure lifecycle: what a (re)run still has to do."""

import pytest

from bringup.lifecycle import PIPELINE, remaining


def test_planned_node_runs_everything():
    assert remaining("planned") == list(PIPELINE)


def test_resume_after_a_crash_skips_completed_stages():
    assert remaining("provisioned") == ["burned_in", "judged", "recorded", "admitted"]
    assert remaining("recorded") == ["admitted"]


def test_admitted_node_is_a_no_op_unless_forced():
    assert remaining("admitted") == []
    assert remaining("admitted", force=True) == list(PIPELINE)


def test_quarantined_is_terminal_until_forced():
    assert remaining("quarantined") == []
    assert remaining("quarantined", force=True)[0] == "discovered"


def test_until_stops_early():
    assert remaining("planned", until="provisioned") == ["discovered", "provisioned"]


def test_unknown_stage_is_an_error():
    with pytest.raises(ValueError):
        remaining("halfway")


def test_interleave_by_rack_round_robins_and_keeps_everything():
    from bringup.lifecycle import interleave_by
    items = [("r1", 1), ("r1", 2), ("r1", 3), ("r2", 1), ("r3", 1), ("r3", 2)]
    out = interleave_by(items, key=lambda x: x[0])
    assert out == [("r1", 1), ("r2", 1), ("r3", 1), ("r1", 2), ("r3", 2), ("r1", 3)]
    assert interleave_by([], key=lambda x: x) == []
