"""The suite's schedule (tests/timeline.py): each worker's fleet groups as spans, the
ungrouped tests between them folded, and when each worker went idle."""

from __future__ import annotations

import timeline
from timeline import Phase


def _p(worker, nodeid, start, stop, when="call"):
    return Phase(worker=worker, nodeid=nodeid, when=when, start=1000.0 + start, stop=1000.0 + stop)


WATCH = "tests/integration/watch/test_a.py::test_one@watch"
WATCH2 = "tests/integration/watch/test_a.py::test_two[x-y]@watch"
UNIT = "tests/unit/test_b.py::test_three"
UNIT2 = "tests/unit/test_b.py::test_four[a@b]"


def test_the_group_is_what_follows_the_last_at_of_a_test_id():
    assert timeline.scope_of(WATCH) == "watch"
    assert timeline.scope_of(WATCH2) == "watch"
    assert timeline.scope_of(UNIT) == ""
    assert timeline.scope_of("tests/unit/test_b.py::test[a@b/c]") == ""


def test_spans_cut_where_the_scope_changes_and_count_busy_time_not_gaps():
    phases = [_p("gw0", WATCH, 0, 100, "setup"), _p("gw0", WATCH, 100, 110), _p("gw0", WATCH2, 120, 150),
              _p("gw0", UNIT, 150, 151), _p("gw0", UNIT2, 200, 202),
              _p("gw1", UNIT, 5, 6)]
    got = timeline.spans(list(reversed(phases)))   # in any order
    assert [(s.worker, s.scope, s.start - 1000, s.stop - 1000, s.busy, s.tests) for s in got] == [
        ("gw0", "watch", 0, 150, 140, 2),
        ("gw0", "(ungrouped)", 150, 202, 3, 2),
        ("gw1", "(ungrouped)", 5, 6, 1, 1)]


def test_lines_show_long_spans_and_each_workers_idle_tail():
    phases = [_p("gw0", WATCH, 0, 600), _p("gw1", UNIT, 10, 20), _p("gw1", UNIT2, 20, 400)]
    out = timeline.lines(phases)
    assert out[1].split() == ["gw0", "0", "600", "600", "1", "watch"]
    assert out[2].split() == ["gw1", "10", "400", "390", "2", "(ungrouped)"]
    assert out[-1] == "last test done: gw0 at 600 s, gw1 at 400 s (each worker idle at the end for 0, 200 s)"
    assert timeline.lines([]) == []


def test_a_short_span_is_left_out_of_the_table_but_not_of_the_tail(tmp_path):
    phases = [_p("gw0", WATCH, 0, 10), _p("gw0", UNIT, 10, 500)]
    out = timeline.lines(phases, shortest_s=30)
    assert [line.split()[-1] for line in out[1:-1]] == ["(ungrouped)"]
    path = tmp_path / "t.jsonl"
    timeline.write(path, phases)
    assert timeline.read(path) == phases
