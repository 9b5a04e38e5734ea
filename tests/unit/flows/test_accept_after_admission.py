"""After the admission of a batch, each pool that gained nodes runs its acceptance job
(flows.commission): which pools, which nodes a failure holds, and a site without
acceptance storage left to ``bringup accept``."""

from __future__ import annotations

import pytest
from runtime_fakes import FakeRuntime

from bringup.lifecycle.select import Selected
from flows.commission import _accept_new, new_by_pool
from flows.walk import RunFailed

SELECTED = [Selected("a1", "r1", "fabric"), Selected("a2", "r1", "validating"), Selected("old", "r1", "active"),
            Selected("b1", "r2", "planned"), Selected("q1", "r2", "burned_in")]


def row(node, verdict="admitted", pool="train"):
    return {"node": node, "verdict": verdict, "labels": {"bringup.io/pool": pool} if verdict == "admitted" else {}}


ROWS = [row("a1"), row("a2"), row("old"), row("b1", pool="infer"), row("q1", "quarantined")]


def test_only_pools_that_gained_nodes_in_this_run_and_only_those_nodes():
    # "old" was serving before the run: its pool's acceptance holds only what is new
    assert new_by_pool(SELECTED, ROWS) == {"infer": ["b1"], "train": ["a1", "a2"]}
    assert new_by_pool(SELECTED, [row("q1", "quarantined"), row("old")]) == {}


class Rt(FakeRuntime):
    def __init__(self, storage: bool) -> None:
        self.storage = storage

    def accepts_after_admission(self) -> bool:
        return self.storage


def test_each_pool_runs_and_a_failure_fails_the_run_after_every_pool_had_its_turn():
    calls = []

    def accept(pool, *, new_nodes, config):
        calls.append((pool, new_nodes, config))
        if pool == "infer":
            raise RunFailed("acceptance FAIL: throughput 40% of the reference")
    with pytest.raises(RunFailed, match="pool infer: acceptance FAIL"):
        _accept_new(Rt(True), SELECTED, ROWS, "site.yaml", accept=accept)
    assert calls == [("infer", ["b1"], "site.yaml"), ("train", ["a1", "a2"], "site.yaml")]


def test_a_site_without_acceptance_storage_is_told_how_to_run_it(capsys):
    def accept(pool, **_kw):
        raise AssertionError("must not run")
    _accept_new(Rt(False), SELECTED, ROWS, None, accept=accept)
    assert "bringup accept --pool P` for infer, train" in capsys.readouterr().out
