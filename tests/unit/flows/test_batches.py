"""Splitting a run into child runs: whole racks, balanced, never more groups than racks;
waiting for them: never forever for a run no worker can take."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bringup.lifecycle.select import Selected
from flows import batches
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


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class _Client:
    """get_client(sync_client=True) as the wait uses it: a child run that stays
    scheduled (or starts at the ``starts_at`` read), each read a step of the clock."""

    def __init__(self, clock: _Clock, starts_at: int | None = None) -> None:
        self.clock, self.starts_at, self.reads, self.cancelled = clock, starts_at, 0, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read_flow_run(self, run_id):
        from prefect.states import Completed, Scheduled
        self.reads += 1
        self.clock.t += 60
        started = self.starts_at is not None and self.reads >= self.starts_at
        return SimpleNamespace(name="batch 1 of 2", state=Completed() if started else Scheduled())

    def set_flow_run_state(self, run_id, state, force=False):
        self.cancelled.append((run_id, state.type.value, force))


def _wait(monkeypatch, client, workers):
    monkeypatch.setattr(batches, "get_client", lambda sync_client: client)
    monkeypatch.setattr(batches.time, "sleep", lambda s: None)
    return batches.wait_for("run-1", pickup_s=180, clock=client.clock, workers=lambda: workers)


def test_a_child_run_no_worker_can_take_is_cancelled_and_named_not_awaited_forever(monkeypatch):
    """A worker stopped after the parent counted it stays ONLINE on the server until it
    misses its heartbeats: the batch handed to it would otherwise be waited for forever."""
    client = _Client(_Clock())
    with pytest.raises(batches.BatchNotPickedUp, match="no worker of pool bringup-batch is online") as exc:
        _wait(monkeypatch, client, workers=0)
    assert "batches=0" in exc.value.hint
    assert client.cancelled == [("run-1", "CANCELLED", True)] and client.reads == 4   # past 180 s, not before


def test_a_child_run_waiting_for_busy_workers_is_waited_for(monkeypatch):
    client = _Client(_Clock(), starts_at=10)   # ten minutes in the queue behind another commission
    run = _wait(monkeypatch, client, workers=2)
    assert run.state.is_final() and client.cancelled == []
