"""A drain's one deadline (bringup.kube.drain), on a fake clock: it bounds the cordon, the
listing and every eviction try, an API server that does not answer included; what holds
the drain is told while it waits (the budget named), and only when that changes; a drain
still blocked at the deadline is DrainBlocked (never retried), naming pods and budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_clock import Clock
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from bringup.errors import DrainBlocked, KubeTransientError
from bringup.kube import KubeAdapter
from bringup.kube.drain import NOTICE_S, refusal
from bringup.kube.models import NodeState, PodRef

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kube"


def refused(kube: KubeAdapter, pod: PodRef, budget: str, healthy: int) -> None:
    """The API server's answer to an eviction a budget refuses (the shape of
    tests/fixtures/kube/eviction-429-pdb.json), through the adapter's own error mapping."""
    body = json.loads((FIXTURES / "eviction-429-pdb.json").read_text())
    body["details"]["causes"][0]["message"] = (f"The disruption budget {budget} needs 1 healthy pods "
                                               f"and has {healthy} currently")

    def answer(*args, **kw):
        exc = ApiException(status=429, reason="Too Many Requests")
        exc.body = json.dumps(body)
        raise exc
    kube._call(f"evict pod {pod}", answer)


class Cluster(KubeAdapter):
    """Node n1 with pods w/a and w/b; w/b is under budget w/web-pdb, which refuses until
    ``release_at`` (None: never). The API server answers nothing before ``down_until``;
    w/b takes ``ends_after`` seconds to go once evicted (w/a goes at once)."""

    def __init__(self, clock: Clock, *, release_at: float | None = None, down_until: float = 0.0,
                 ends_after: float = 0.0) -> None:
        super().__init__(k8s.ApiClient(), sleep=clock.sleep, clock=clock)
        self.clock, self.release_at, self.down_until, self.ends_after = clock, release_at, down_until, ends_after
        self.notes, self.evicted_at, self.cordons, self.tries = [], {}, 0, 0

    def _up(self, what: str) -> None:
        if self.clock.now < self.down_until:
            raise KubeTransientError(f"{what}: API server unreachable: connection refused")

    def cordon(self, name, why=""):
        self.cordons += 1
        self._up(f"patch node {name}")
        return NodeState(name=name, exists=True, unschedulable=True)

    def pods_on(self, name):
        self._up(f"list pods on {name}")
        return [PodRef(namespace="w", name="a"), PodRef(namespace="w", name="b")]

    def _evict(self, pod):
        self._up(f"evict pod {pod}")
        if pod.name == "b" and (self.release_at is None or self.clock.now < self.release_at):
            self.tries += 1
            refused(self, pod, "web-pdb", healthy=1 + self.tries % 2)   # its counts move while it waits
        self.evicted_at.setdefault(pod.name, self.clock.now)

    def _gone(self, pod):
        at = self.evicted_at.get(pod.name)
        return at is not None and (pod.name == "a" or self.clock.now - at >= self.ends_after)

    def _note(self, name, reason, message, warning=False):
        self.notes.append(reason)


def test_one_deadline_bounds_the_whole_drain_an_unreachable_api_server_included():
    clock = Clock()
    kube = Cluster(clock, down_until=120)      # the first 2 minutes: no answer at all
    with pytest.raises(DrainBlocked) as err:
        kube.drain("n1", timeout=300, poll=1)
    assert clock.now == 300                    # not 300 after the cordon, not 300 per try
    assert kube.cordons > 1 and kube.tries > 1
    exc = err.value
    assert exc.pods == ["w/b"] and exc.budgets == ["w/web-pdb"]
    assert "w/b (PodDisruptionBudget w/web-pdb refuses its eviction: " in str(exc)
    # the orchestrator does not wait it all again: not transient, and not the node's fault
    assert not exc.transient and exc.controller_fault
    assert "drain_timeout_s" in exc.hint and "w/web-pdb" in exc.hint
    assert kube.notes == ["DrainBlocked"]


def test_an_api_server_silent_past_the_deadline_ends_the_drain_there():
    clock = Clock()
    kube = Cluster(clock, down_until=10_000)
    with pytest.raises(DrainBlocked, match="could not cordon node n1 within the drain's 300 s") as err:
        kube.drain("n1", timeout=300, poll=1)
    assert clock.now == 300 and not err.value.transient and max(clock.sleeps) <= 10


def test_what_holds_the_drain_is_told_at_once_and_again_only_when_it_changes():
    clock = Clock()
    kube = Cluster(clock, release_at=60, ends_after=100)
    waits = []
    res = kube.drain("n1", timeout=300, poll=1, on_wait=lambda w: waits.append((clock.now, w)))
    assert sorted(res.evicted) == ["w/a", "w/b"] and res.seconds <= 300 and kube.notes == ["Drained"]
    assert len(waits) == 2, [w.text() for _, w in waits]
    (t0, first), (t1, second) = waits
    assert t0 == 0 and first.pods == ["w/b"] and first.budgets == ["w/web-pdb"]   # w/a went at once
    assert "PodDisruptionBudget w/web-pdb refuses its eviction" in first.text()
    assert "drain_timeout_s" in first.text() and "300 s" in first.text()
    # the budget let go: w/b was evicted and is terminating (said, since it is past the notice)
    assert t1 >= 60 and second.budgets == [] and "waiting for it to terminate" in second.text()


def test_a_drain_whose_pods_end_promptly_says_nothing_while_it_waits():
    clock = Clock()
    kube = Cluster(clock, release_at=0, ends_after=NOTICE_S / 3)
    waits = []
    kube.drain("n1", timeout=300, poll=1, on_wait=waits.append)
    assert waits == [] and clock.now < NOTICE_S


def test_a_real_refusal_names_its_budget_in_the_pods_namespace():
    kube = KubeAdapter(k8s.ApiClient())
    pod = PodRef(namespace="prod", name="web-0")
    body = (FIXTURES / "eviction-429-pdb.json").read_text()

    def answer(*args, **kw):
        exc = ApiException(status=429, reason="Too Many Requests")
        exc.body = body
        raise exc
    with pytest.raises(KubeTransientError) as err:
        kube._call(f"evict pod {pod}", answer)
    budget, why = refusal(pod, err.value.args[0])
    assert budget == "prod/[elided]"
    assert why.startswith("429 Cannot evict pod") and "needs 11 healthy pods and has 12 currently" in why
    # a 429 without a budget (the API server's own rate limit) names none
    assert refusal(pod, "evict pod prod/web-0: 429 Too many requests, please try again later.")[0] == ""
