"""The fabric stage of a walk with fakes: the pool's results recorded through the real
lifecycle and the real ``fabric`` step (pass -> validating, blamed -> quarantined, a bad
link passes and is kept in both nodes' evidence, undecided -> held in fabric), and the
walk going on only for the nodes past it."""

from __future__ import annotations

import logging

import pytest
from lifecycle_fakes import MemoryRecords
from runtime_fakes import FakeRuntime

from bringup.errors import ConfigError
from bringup.fabric.fabric_step import fabric as fabric_step
from bringup.fabric.fabric_step import held_reason, result_of
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, State
from bringup.lifecycle.results import StepResult
from bringup.lifecycle.select import Selected
from flows import fabric, runtime
from flows.walk import Walk

LINK = {"kind": "link", "nodes": ["n1", "n4"], "rails": [], "message": "n1 and n4 each pass with others but fail "
        "together: bad link or path"}
DOCS = {
    "n1": {"verdict": "pass", "reasons": [], "links": [LINK], "blamed": ["n2"],
           "pairs": [{"a": "n1", "b": "n4", "outcome": "fail", "busbw_gbps": 60.0, "detail": "busbw low"},
                     {"a": "n1", "b": "n3", "outcome": "pass", "busbw_gbps": 371.0}]},
    "n2": {"verdict": "fail", "blamed": ["n2"], "links": [],
           "reasons": ["n2 fails with known-good partners n1, n3 on rail mlx5_5"], "pairs": []},
    "n3": {"verdict": "unknown", "reasons": ["n3: not enough known-good partners to blame or clear it"]},
    "n4": {"verdict": "pass", "reasons": [], "links": [LINK], "blamed": ["n2"], "pairs": []},
}


class Rt(FakeRuntime):
    def __init__(self, lc, docs):
        self.lc, self.docs, self.asked = lc, docs, []

    def lifecycle(self):
        return self.lc

    def fabric_test(self, names, *, mode="rack"):
        self.asked.append((sorted(names), mode))
        return {n: self.docs[n] for n in names if n in self.docs}, [{"pair": "n1 - n4", "outcome": "fail"}]


@pytest.fixture
def pool(monkeypatch):
    rec = MemoryRecords("n1", "n2", "n3", "n4", "n5")
    for n in rec.nodes.values():
        n.stage = "fabric"
    rec.nodes["n5"].stage = "quarantined"  # failed earlier in this run: never tested, never walked on

    def step(name):
        if name == "fabric":
            return lambda node, params: fabric_step(None, node, params)
        return lambda node, params: StepResult(node=node.name, step=name, ok=True)
    lc = Lifecycle(steps={n: step(n) for n in STEP_NAMES}, records=rec)
    rt = Rt(lc, DOCS)
    runtime.use(rt)
    tables = []
    monkeypatch.setattr(fabric, "get_run_logger", lambda: logging.getLogger("fabric-test"))
    monkeypatch.setattr(fabric, "create_table_artifact", lambda **kw: tables.append(kw))
    monkeypatch.setattr(fabric, "publish_node", lambda *a, **k: None)
    monkeypatch.setattr(fabric, "fabric_test", fabric.fabric_test.fn)
    yield rec, lc, rt, tables
    runtime.use(None)


def test_each_node_gets_its_share_and_only_passed_nodes_walk_on(pool):
    rec, lc, rt, tables = pool
    selected = [Selected(n, "r1", rec.nodes[n].stage) for n in ("n1", "n2", "n3", "n4", "n5")]
    first = [Walk(lc.report(s.name)) for s in selected]
    walked = []

    def walk_rest(nodes):
        walked.extend(s.name for s in nodes)
        return [Walk(lc.report(s.name), [lc.run_step(s.name, State.VALIDATING, step) for step in ("join", "gate")])
                for s in nodes]

    walks = fabric.through_fabric(selected, first, {"fabric_mode": "cross_rack"}, config=None, prefix="t",
                                  walk_rest=walk_rest)
    assert rt.asked == [(["n1", "n2", "n3", "n4"], "cross_rack")]
    assert tables[0]["key"] == "t-fabric" and tables[0]["table"] == [{"pair": "n1 - n4", "outcome": "fail"}]
    assert walked == ["n1", "n4"]
    stages = {n: rec.nodes[n].stage for n in rec.nodes}
    assert stages == {"n1": "active", "n2": "quarantined", "n3": "fabric", "n4": "active", "n5": "quarantined"}
    # blamed: quarantined with the reason naming node, partners and rail
    assert "n2 fails with known-good partners n1, n3 on rail mlx5_5" in rec.nodes["n2"].custom_fields["bringup_reason"]
    # undecided: held in fabric with the reason, never passed
    assert rec.nodes["n3"].custom_fields["bringup_reason"].startswith("held in fabric: fabric test undecided: n3")
    assert rec.evidence["n3"]["fabric"] == DOCS["n3"]   # what the test saw is kept in NetBox
    by = {w.report.node: w for w in walks}
    assert by["n3"].report.verdict == "held" and by["n2"].report.verdict == "quarantined"
    # the bad link's two ends passed, and the link is in both nodes' fabric evidence
    for n in ("n1", "n4"):
        ev = next(r for r in by[n].results if r.step == "fabric").evidence[0]
        assert ev.kind == "fabric" and "bad link or path" in ev.summary and ev.style == "warning"
        assert [r.step for r in by[n].results] == ["fabric", "join", "gate"]
    assert [w.report.node for w in walks] == ["n1", "n2", "n3", "n4", "n5"]


def test_a_test_that_cannot_run_holds_every_node_and_fails_the_run_when_ours(pool, monkeypatch):
    rec, _lc, rt, _tables = pool

    def broken(names, *, mode="rack"):
        raise ConfigError("settings lack ssh_key_file")
    monkeypatch.setattr(rt, "fabric_test", broken)
    _out, errors = fabric.fabric_test(["n1", "n4"], 2, {}, config=None)
    assert errors == ["the fabric test could not run: settings lack ssh_key_file"]
    assert {rec.nodes[n].stage for n in ("n1", "n4")} == {"fabric"}
    assert "settings lack ssh_key_file" in rec.nodes["n1"].custom_fields["bringup_reason"]


def test_a_node_the_test_returned_nothing_for_is_held():
    assert held_reason({}) == "fabric test undecided: the fabric test gave no verdict"


def test_the_step_refuses_to_run_without_the_pools_result():
    class Rec:
        name = "n1"
    with pytest.raises(ConfigError, match="n1: the fabric step records the pool's fabric test and was given no result"):
        fabric_step(None, Rec(), {})
    with pytest.raises(ConfigError, match="an undecided result"):
        fabric_step(None, Rec(), {"fabric": {"verdict": "unknown"}})


def test_step_result_of_a_pass_a_fail_and_the_figures():
    ok = result_of("n1", DOCS["n1"])
    assert ok.ok and ok.reasons == [] and ok.figures == {"fabric_busbw_gbps": 371.0}
    assert "blamed in this pool: n2" in ok.evidence[0].summary and "pair n1 - n4: fail, busbw 60.0" in \
        ok.evidence[0].summary
    bad = result_of("n2", DOCS["n2"])
    assert not bad.ok and bad.reasons == DOCS["n2"]["reasons"] and bad.evidence[0].style == "danger"


@pytest.mark.parametrize(("until", "crosses"), [("active", True), ("validating", True), ("fabric", False),
                                                ("burned_in", False), ("provisioned", False)])
def test_which_walks_go_through_the_fabric_test(until, crosses):
    assert fabric.crosses_fabric(until) is crosses


def test_a_node_an_earlier_run_held_is_tested_again_and_a_node_another_run_holds_is_not(pool):
    """A "held" verdict on a node this run walked is only the reason an earlier run left
    (no partner then, or the API down at admission): this run tests it, or walks it on.
    A node skipped because another run holds it is neither tested nor walked."""
    rec, lc, rt, _tables = pool
    for n in ("n1", "n4"):
        rec.nodes[n].custom_fields["bringup_reason"] = f"held in fabric: fabric test undecided: {n} has no partner"
    rec.nodes["n5"].stage = "validating"
    rec.nodes["n5"].custom_fields["bringup_reason"] = "held in validating: join: API server unreachable"
    selected = [Selected(n, "r1", rec.nodes[n].stage) for n in ("n1", "n2", "n4", "n5")]
    first = [Walk(lc.report(s.name), skipped=s.name == "n2") for s in selected]
    assert [w.report.verdict for w in first] == ["held", "pending", "held", "held"]
    walked = []

    def walk_rest(nodes):
        walked.extend(s.name for s in nodes)
        return [Walk(lc.report(s.name)) for s in nodes]

    fabric.through_fabric(selected, first, {}, config=None, prefix="t", walk_rest=walk_rest)
    assert rt.asked == [(["n1", "n4"], "rack")]
    assert walked == ["n1", "n4", "n5"]
    assert rec.nodes["n2"].stage == "fabric"   # the other run's: untouched here
