"""Quarantine that converges (issue #13, defect 4): NetBox is written first, the cordon and
taint are retried until the API server confirms them, and the reconcile step makes the
cluster agree with NetBox for every node out of service."""

from __future__ import annotations

import pytest
from lifecycle_fakes import MemoryRecords

from bringup.admission.labels import QUARANTINE_KEY, Taint
from bringup.errors import KubeAuthError, KubeConflictError, KubeError, KubeNotFoundError, KubeTransientError
from bringup.kube.models import NodeState, QuarantineResult
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, State
from bringup.lifecycle.results import StepResult
from bringup.service import reconcile as rc
from bringup.service.reconcile import Target, isolate, reconcile


class FakeCluster:
    """Nodes as the API server holds them. ``down`` answers every call with the API server
    unreachable; ``deaf`` acknowledges a patch without applying it (a write that got lost)."""

    def __init__(self, *registered: str, cordoned: tuple[str, ...] = ()) -> None:
        self.nodes = {n: {"unschedulable": n in cordoned, "taints": []} for n in registered}
        self.down = 0          # number of calls still to fail (-1: for ever)
        self.deaf = 0          # number of patches still to drop
        self.calls: list[str] = []

    def _api(self, what: str) -> None:
        self.calls.append(what)
        if self.down:
            self.down -= 1 if self.down > 0 else 0
            raise KubeTransientError(f"{what}: API server unreachable")

    def node_state(self, name: str) -> NodeState:
        self._api(f"read {name}")
        n = self.nodes.get(name)
        if n is None:
            return NodeState(name=name, exists=False)
        return NodeState(name=name, exists=True, ready=True, unschedulable=n["unschedulable"], taints=n["taints"])

    def quarantine(self, name: str, reason: str, effect: str = "NoSchedule") -> QuarantineResult:
        self._api(f"quarantine {name}")
        taint = Taint(key=QUARANTINE_KEY, value="x", effect=effect)
        if name not in self.nodes:
            return QuarantineResult(node=name, applied=False, taint=taint, message="never joined")
        if self.deaf:
            self.deaf -= 1
        else:
            self.nodes[name] = {"unschedulable": True, "taints": [taint]}
        return QuarantineResult(node=name, applied=True, taint=taint, message="ok")

    def cordon(self, name: str) -> NodeState:
        self._api(f"cordon {name}")
        if name not in self.nodes:
            raise KubeNotFoundError(f"node {name} not found")
        self.nodes[name]["unschedulable"] = True
        return self.node_state(name)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def isolated(cluster: FakeCluster, name: str) -> bool:
    n = cluster.nodes[name]
    return n["unschedulable"] and any(t.key == QUARANTINE_KEY for t in n["taints"])


# --- isolate: retried until confirmed ----------------------------------------------------------
def test_isolate_retries_while_the_api_is_down_and_confirms_by_reading_back():
    kube, clock = FakeCluster("n1"), Clock()
    kube.down = 3
    msg = isolate(kube, "n1", "xid 79", within=60, sleep=clock.sleep, clock=clock)
    assert isolated(kube, "n1") and "read back" in msg
    assert clock.sleeps == [1.0, 2.0, 4.0]                     # backoff
    assert kube.calls[-1] == "read n1"                         # confirmed by a read, not assumed


def test_isolate_does_not_trust_an_acknowledged_patch():
    kube, clock = FakeCluster("n1"), Clock()
    kube.deaf = 2
    isolate(kube, "n1", "xid 79", within=60, sleep=clock.sleep, clock=clock)
    assert isolated(kube, "n1") and kube.calls.count("quarantine n1") == 3


def test_isolate_gives_up_after_its_time_with_the_last_error():
    kube, clock = FakeCluster("n1"), Clock()
    kube.down = -1
    with pytest.raises(KubeTransientError, match="unreachable"):
        isolate(kube, "n1", "xid 79", within=30, sleep=clock.sleep, clock=clock)
    assert clock.now <= 30 and len(clock.sleeps) >= 3


def test_isolate_stops_at_once_when_our_credentials_are_refused():
    class Refused(FakeCluster):
        def quarantine(self, name, reason, effect="NoSchedule"):
            raise KubeAuthError("403 forbidden")
    clock = Clock()
    with pytest.raises(KubeAuthError):
        isolate(Refused("n1"), "n1", "r", sleep=clock.sleep, clock=clock)
    assert clock.sleeps == []


def test_a_node_that_never_joined_needs_nothing():
    assert "never joined" in isolate(FakeCluster(), "n1", "r")


def test_isolate_retries_update_conflicts():
    class Busy(FakeCluster):
        left = 2

        def quarantine(self, name, reason, effect="NoSchedule"):
            if self.left:
                self.left -= 1
                raise KubeConflictError("kept changing")
            return super().quarantine(name, reason)
    kube, clock = Busy("n1"), Clock()
    isolate(kube, "n1", "r", sleep=clock.sleep, clock=clock)
    assert isolated(kube, "n1")


# --- the lifecycle: NetBox first, then the cluster ----------------------------------------------
def failing_judge(node, params):
    return StepResult(node=node.name, step="judge", ok=False, reasons=["busbw 300 < 360"])


def test_quarantine_writes_netbox_before_touching_the_cluster_and_survives_it_being_down():
    rec = MemoryRecords("n1")
    rec.nodes["n1"].stage = "burned_in"
    kube, clock = FakeCluster("n1"), Clock()
    kube.down = -1
    seen_stage = []

    def on_quarantine(node, reason):
        seen_stage.append(rec.nodes["n1"].stage)   # what NetBox holds when the cluster is asked
        return isolate(kube, node.name, reason, within=20, sleep=clock.sleep, clock=clock)

    steps = {n: (lambda node, p, n=n: StepResult(node=node.name, step=n, ok=True)) for n in STEP_NAMES}
    lc = Lifecycle({**steps, "judge": failing_judge}, rec, on_quarantine=on_quarantine)
    assert lc.run_step("n1", State.BURNED_IN, "judge").state == "quarantined"
    n = rec.nodes["n1"]
    assert seen_stage == ["quarantined"]
    assert n.stage == "quarantined" and n.status == "failed" and "bringup-quarantine" in n.tags
    assert any("could not cordon and taint yet" in text and "reconcile" in text for _k, text in n.journal)
    assert not isolated(kube, "n1")
    # the API server comes back: the reconcile step finishes the job
    kube.down = 0
    rows = reconcile(lambda: kube, [Target("n1", n.stage, n.custom_fields["bringup_reason"])])
    assert isolated(kube, "n1")
    assert [r.as_dict() for r in rows] == [{"node": "n1", "netbox": "quarantined",
                                            "kubernetes before": "schedulable, untainted",
                                            "action": "cordon and taint", "kubernetes after": "cordoned, tainted",
                                            "held by": "bringup", "error": ""}]


# --- reconcile: the table ------------------------------------------------------------------------
def test_reconcile_fixes_every_disagreement_and_leaves_agreeing_and_serving_nodes_alone():
    kube = FakeCluster("q1", "q2", "d1", "a1", "i1", cordoned=("q2", "a1"))
    isolate(kube, "q2", "already")   # q2 already agrees
    rows = {r.node: r for r in reconcile(lambda: kube, [
        Target("q1", "quarantined", "xid 79"), Target("q2", "quarantined"), Target("d1", "draining"),
        Target("a1", "active"), Target("i1", "inspection"), Target("gone", "quarantined"),
        Target("p1", "planned")])}
    assert set(rows) == {"q1", "q2", "d1", "i1", "gone"}          # only nodes out of service
    assert rows["q1"].action == "cordon and taint" and isolated(kube, "q1") and not rows["q1"].error
    assert rows["q2"].action == "none" and rows["q2"].after == "cordoned, tainted"
    assert rows["d1"].action == "cordon" and kube.nodes["d1"]["unschedulable"] and not kube.nodes["d1"]["taints"]
    assert rows["i1"].action == "cordon and taint" and isolated(kube, "i1")
    assert rows["gone"].before == "not registered" and rows["gone"].action == "none" and not rows["gone"].error
    assert kube.nodes["a1"] == {"unschedulable": True, "taints": []}   # an operator's cordon is kept


def test_reconcile_reports_what_it_could_not_fix_as_a_value():
    kube = FakeCluster("q1")
    kube.down = -1
    rows = reconcile(lambda: kube, [Target("q1", "quarantined", "r")])
    assert len(rows) == 1 and rows[0].before == "unknown" and "unreachable" in rows[0].error
    kube.down, kube.deaf = 0, 1
    rows = reconcile(lambda: kube, [Target("q1", "quarantined", "r")])
    assert "still shows schedulable, untainted" in rows[0].error


def test_reconcile_asks_for_the_cluster_only_when_a_node_needs_it():
    def no_cluster():
        raise AssertionError("the cluster was not needed")
    assert reconcile(no_cluster, [Target("a1", "active"), Target("p1", "planned")]) == []

    def no_kubeconfig():
        raise KubeError("settings have no kubeconfig")
    rows = reconcile(no_kubeconfig, [Target("q1", "quarantined")])
    assert rows[0].error == "settings have no kubeconfig"


def test_the_real_lifecycle_isolates_through_the_confirmed_retry(monkeypatch, tmp_path):
    """The production wiring: the engine ``stages.lifecycle`` builds isolates a node with
    the retrying, confirming isolate (a dropped patch is not taken for done)."""
    from bringup import pipeline as stages

    kube = FakeCluster("n1")
    kube.deaf = 1
    settings = type("S", (), {"netbox_outage_s": 0, "lease_renew_every_s": 71.5, "spool_path": lambda self: tmp_path})()
    ctx = type("Ctx", (), {"kube": kube, "settings": settings})()
    monkeypatch.setattr(rc.time, "sleep", lambda s: None)
    lc = stages.lifecycle(ctx)
    assert "read back" in lc.on_quarantine(type("R", (), {"name": "n1"})(), "xid 79")
    assert isolated(kube, "n1") and kube.calls.count("quarantine n1") == 2
