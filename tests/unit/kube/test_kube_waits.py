"""The Kubernetes adapter's waits (all through bringup.retry, on the adapter's clock): a pod
to finish, a node to be Ready, a drain's evictions, an update that keeps conflicting."""

from __future__ import annotations

import pytest
from fake_clock import Clock
from kubernetes import client as k8s

from bringup.errors import DrainBlocked, KubeConflictError, KubeError, KubeTransientError
from bringup.kube import KubeAdapter
from bringup.kube import pods as kpods
from bringup.kube.models import NodeState, PodRef


def adapter(clock: Clock) -> KubeAdapter:
    return KubeAdapter(k8s.ApiClient(), sleep=clock.sleep, clock=clock)


def test_wait_pod_returns_the_pod_once_it_finished(monkeypatch):
    clock = Clock()
    phases = iter(["Pending", "Running", "Succeeded"])
    monkeypatch.setattr(kpods, "read_pod", lambda kube, ns, name: kpods.PodStatus(namespace=ns, name=name,
                                                                                  phase=next(phases)))
    st = kpods.wait_pod(adapter(clock), "ns", "smoke", timeout=60, poll=2)
    assert st.finished and st.phase == "Succeeded" and clock.sleeps == [2, 2]


def test_wait_pod_returns_the_pod_as_it_stands_when_the_time_runs_out(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(kpods, "read_pod", lambda kube, ns, name: kpods.PodStatus(namespace=ns, name=name,
                                                                                  phase="Running"))
    st = kpods.wait_pod(adapter(clock), "ns", "smoke", timeout=5, poll=2)
    assert not st.finished and st.phase == "Running"
    assert clock.sleeps == [2, 2, 1] and clock.now == 5      # the last pause cut to the deadline


def test_wait_node_ready_waits_out_an_unreachable_api_server():
    clock = Clock()
    kube = adapter(clock)
    answers = [KubeTransientError("API server unreachable"), NodeState(name="n1", exists=False),
               NodeState(name="n1", exists=True, ready=True)]

    def node_state(name):
        a = answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a
    kube.node_state = node_state
    assert kube.wait_node_ready("n1", timeout=60, poll=2).ready and clock.sleeps == [2, 2]


def test_a_node_that_never_gets_ready_is_the_nodes_error_saying_what_was_seen():
    clock = Clock()
    kube = adapter(clock)
    kube.node_state = lambda name: NodeState(name=name, exists=True, ready=False, ready_reason="KubeletNotReady")
    with pytest.raises(KubeError, match="did not become Ready within 10s; last seen: Ready is not True") as err:
        kube.wait_node_ready("n1", timeout=10, poll=2)
    assert not isinstance(err.value, KubeTransientError) and clock.now == 10


class Draining(KubeAdapter):
    """A node with two pods: ``a`` goes once evicted, ``b``'s budget says "not now" (429)
    ``refusals`` times, then it goes too (-1: never)."""

    def __init__(self, clock: Clock, refusals: int) -> None:
        super().__init__(k8s.ApiClient(), sleep=clock.sleep, clock=clock)
        self.refusals, self.notes, self.evicted = refusals, [], set()

    def cordon(self, name, why=""):
        return NodeState(name=name, exists=True, unschedulable=True)

    def pods_on(self, name):
        return [PodRef(namespace="w", name="a"), PodRef(namespace="w", name="b"),
                PodRef(namespace="kube-system", name="ds", owner_kind="DaemonSet")]

    def _evict(self, pod):
        if pod.name == "b" and self.refusals:
            self.refusals -= 1 if self.refusals > 0 else 0
            raise KubeTransientError("Cannot evict pod as it would violate the pod's disruption budget.")
        self.evicted.add(pod.name)

    def _gone(self, pod):
        return pod.name in self.evicted

    def _note(self, name, reason, message, warning=False):
        self.notes.append(reason)


def test_a_drain_retries_a_refused_eviction_with_growing_pauses():
    clock = Clock()
    kube = Draining(clock, refusals=3)
    res = kube.drain("n1", timeout=60, poll=1)
    assert sorted(res.evicted) == ["w/a", "w/b"] and res.skipped == ["kube-system/ds"]
    assert clock.sleeps == [1, 2, 4] and kube.notes == ["Drained"]


def test_a_drain_that_runs_out_of_time_names_the_pods_left_and_why():
    clock = Clock()
    kube = Draining(clock, refusals=-1)
    with pytest.raises(DrainBlocked, match="w/b .*disruption budget") as err:
        kube.drain("n1", timeout=30, poll=1)
    assert err.value.pods == ["w/b"] and kube.notes == ["DrainBlocked"]
    assert max(clock.sleeps) <= 10 and clock.now == 30


def test_an_update_that_keeps_conflicting_gives_up_saying_so():
    clock = Clock()
    kube = adapter(clock)
    patches = []
    kube._read_node = lambda name: {"metadata": {"resourceVersion": str(len(patches))}}

    def patch(name, body):
        patches.append(body["metadata"]["resourceVersion"])
        raise KubeConflictError("the object has been modified")
    kube._patch_node = patch
    with pytest.raises(KubeConflictError, match="kept changing; gave up after 5 attempts"):
        kube._update_node("n1", lambda node: {})
    assert patches == ["0", "1", "2", "3", "4"]      # each try built on a fresh read
    assert clock.now == 0                            # a lost race is tried again at once
