"""A drain a PodDisruptionBudget blocks, through the real lifecycle wiring
(:func:`bringup.pipeline.lifecycle`: the drain step, the lifecycle's hold) on in-memory
records and a fake cluster on a fake clock: the step's deadline is the whole step's (not
retried by the flow), NetBox says what holds the node while it waits, a drain that goes
through puts the node's reason back, and a re-burn-in run that leaves a node blocked
fails naming the pods and the budget."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from kubernetes import client as k8s
from lifecycle_fakes import MemoryRecords
from runtime_fakes import FakeRuntime

from bringup import pipeline
from bringup.context import Context
from bringup.errors import DrainBlocked, KubeTransientError
from bringup.kube import KubeAdapter
from bringup.kube.models import NodeState, PodRef
from bringup.lifecycle.engine import QUARANTINE_TAG
from bringup.lifecycle.select import Selected
from bringup.service.blastradius import Decision
from bringup.settings import Settings
from flows import reburnin as reburnin_flow
from flows import runtime, walk
from flows.walk import RunFailed

XID = "health watch: XID 79 on GPU 3"
REFUSAL = ("429 Cannot evict pod as it would violate the pod's disruption budget.; "
           "The disruption budget trainer-pdb needs 1 healthy pods and has 1 currently")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.seen: list[str] = []   # the node's reason in NetBox at each pause of the drain
        self.look = lambda: ""

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.seen.append(self.look())
        self.now += s


class Cluster(KubeAdapter):
    """n1 runs ml/trainer-0, under budget ml/trainer-pdb until ``release_at`` (None: never)."""

    def __init__(self, clock: Clock, release_at: float | None) -> None:
        super().__init__(k8s.ApiClient(), sleep=clock.sleep, clock=clock)
        self.clock, self.release_at, self.evicted = clock, release_at, False

    def cordon(self, name, why=""):
        return NodeState(name=name, exists=True, unschedulable=True)

    def pods_on(self, name):
        return [] if self.evicted else [PodRef(namespace="ml", name="trainer-0")]

    def _evict(self, pod):
        if self.release_at is None or self.clock.now < self.release_at:
            raise KubeTransientError(f"evict pod {pod}: {REFUSAL}")
        self.evicted = True

    def _gone(self, pod):
        return self.evicted

    def _note(self, name, reason, message, warning=False):
        pass


@pytest.fixture
def cluster(tmp_path):
    """The real lifecycle of bringup.pipeline over in-memory records: node n1 serving,
    ``make(release_at)`` gives (lifecycle, records, clock)."""
    def make(release_at: float | None, stage: str = "active", reason: str = ""):
        token = tmp_path / "token"
        token.write_text("t")
        token.chmod(0o600)
        ctx = Context(Settings(netbox_url="http://netbox.invalid", netbox_token_file=token, spool_dir=tmp_path,
                               drain_timeout_s=300))
        clock = Clock()
        ctx.__dict__["kube"] = Cluster(clock, release_at)    # the cached connection, faked
        lc = pipeline.lifecycle(ctx)
        rec = MemoryRecords("n1")
        node = rec.nodes["n1"]
        node.stage, node.custom_fields["bringup_reason"] = stage, reason
        lc.records = rec
        clock.look = lambda: str(node.custom_fields.get("bringup_reason") or "")
        return lc, rec, clock
    return make


def test_a_blocked_drain_says_why_while_it_waits_and_is_held_at_its_deadline_not_retried(cluster):
    lc, rec, clock = cluster(release_at=None, stage="draining", reason=XID)
    with pytest.raises(DrainBlocked) as err:
        lc.run_step("n1", "draining", "drain", {})
    assert clock.now == 300                       # the setting's deadline, once
    # while it waited, NetBox said what holds it (from the first refusal on)
    assert clock.seen and all(s.startswith("held in draining: drain waits") for s in clock.seen), clock.seen[:2]
    assert "ml/trainer-0 (PodDisruptionBudget ml/trainer-pdb refuses its eviction" in clock.seen[0]
    node = rec.nodes["n1"]
    assert node.stage == "draining" and QUARANTINE_TAG not in node.tags     # held, not blamed
    reason = node.custom_fields["bringup_reason"]
    assert reason.startswith("held in draining: drain: drain of node n1 blocked"), reason
    assert "ml/trainer-0" in reason and "ml/trainer-pdb" in reason and "drain_timeout_s" in reason
    # one journal line when the wait began, one at the deadline: not one per try
    assert [k for k, _ in node.journal] == ["warning", "warning"]

    # the flow does not retry it: a retry would wait the whole deadline again
    class Failed:
        def result(self):
            raise err.value
    assert walk.transient_only(None, None, Failed()) is False


def test_a_drain_that_goes_through_after_a_wait_gives_the_node_its_reason_back(cluster):
    lc, rec, clock = cluster(release_at=45, stage="draining", reason=XID)
    res = lc.run_step("n1", "draining", "drain", {})
    assert res.ok and res.state == "provisioned" and 45 <= clock.now < 300
    assert clock.seen[0].startswith("held in draining: drain waits") and "ml/trainer-pdb" in clock.seen[0]
    assert rec.nodes["n1"].custom_fields["bringup_reason"] == XID    # the reason it left service for
    assert res.figures["drain_waits"] == 1


def test_a_reburnin_run_that_leaves_a_node_blocked_fails_naming_pods_and_budget(cluster, monkeypatch):
    lc, rec, clock = cluster(release_at=None)

    class Rt(FakeRuntime):
        def lifecycle(self):
            return lc

        def due_for_reburnin(self, **selection):
            return [Selected(name="n1", rack="r1", stage="active")]

        def guard(self, requests):
            return [Decision(node=r.node, action=r.action, allowed=True, pool="p", size=4, acted=0, limit=2,
                             window=timedelta(hours=1), message="allowed") for r in requests]

    class Now:   # a task's future, resolved at once
        def __init__(self, value):
            self.value = value

        def result(self):
            return self.value
    walks = []
    walk_node = walk.walk_node.fn   # the task's body, run in this thread

    def submit(*args, **kw):
        walks.append(walk_node(*args, **kw))
        return Now(walks[-1])
    monkeypatch.setattr(walk, "walk_node", type("Task", (), {"submit": staticmethod(submit)}))
    monkeypatch.setattr(walk, "get_run_logger", lambda: logging.getLogger("drain-test"))
    for name in ("publish_node", "publish_fleet", "publish_report", "publish_requests", "ensure_rack_limits",
                 "drain_releases"):
        monkeypatch.setattr(walk, name, lambda *a, **kw: None)
    monkeypatch.setattr(walk, "converge", lambda reports, **kw: [])
    monkeypatch.setattr(walk, "run_step", lambda node, rack, state, st, params, config=None, order=0, holder=None:
                        lc.run_step(node, state, st, params, holder=holder))
    runtime.use(Rt())
    try:
        with pytest.raises(RunFailed) as err:
            reburnin_flow.reburnin.fn(nodes=["n1"])
    finally:
        runtime.use(None)
    text = str(err.value)
    assert "n1: drain of node n1 blocked" in text and "ml/trainer-0" in text and "ml/trainer-pdb" in text
    (w,) = walks
    assert w.report.verdict == "held" and w.report.stage == "draining"
    assert any("ml/trainer-pdb" in r for r in w.report.reasons), w.report.reasons
    assert rec.nodes["n1"].stage == "draining"
    assert rec.lease(rec.node("n1")) is None        # the lease given back all the same


def test_a_forced_rerun_whose_drain_is_blocked_stops_before_touching_the_node(cluster):
    lc, rec, clock = cluster(release_at=None)
    with pytest.raises(DrainBlocked):
        lc.start("n1", force=True)
    node = rec.nodes["n1"]
    assert node.stage == "active" and clock.now == 300      # never reset to planned for a reinstall
    assert clock.seen[0].startswith("held in active: forced rerun: drain waits"), clock.seen[0]
    reason = node.custom_fields["bringup_reason"]
    assert reason.startswith("held in active: forced rerun: drain of node n1 blocked") and "ml/trainer-pdb" in reason
