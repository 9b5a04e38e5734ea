"""One pool acceptance run: submit, time the queue wait, watch the phases, delete one worker
pod mid-training, time the resume from its checkpoint, and collect what every pod said.

The cluster and the clock are seams (:class:`Cluster`, :class:`Clock`): the real ones are
:class:`bringup.kube.jobs.JobClient` and the wall clock; the logic here is tested with
fakes. The result is an :class:`~bringup.workload.policy.Observation` for
:func:`bringup.workload.policy.judge`.

The restore time is measured from the deletion to the first poll that finds the
replacement pod's ``restore`` line, so it is exact to one ``poll_s``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bringup.kube.jobs import JobView, PodView
from bringup.workload.phases import parse_log
from bringup.workload.policy import AcceptancePolicy, Observation, WorkerLog


class Cluster(Protocol):
    def submit(self, documents: list[dict[str, Any]]) -> None: ...
    def job(self, namespace: str, name: str) -> JobView: ...
    def pods(self, namespace: str, job: str) -> list[PodView]: ...
    def log(self, namespace: str, pod: str) -> str: ...
    def delete_pod(self, namespace: str, pod: str) -> None: ...
    def delete_job(self, namespace: str, name: str) -> None: ...


class Clock(Protocol):
    def now(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class WallClock:
    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class _Watch:
    """What the run knows so far: the latest log of every pod it has seen (a deleted pod's
    log is kept as it was read before the deletion)."""

    logs: dict[str, tuple[PodView, str]] = field(default_factory=dict)

    def read(self, cluster: Cluster, ns: str, pods: list[PodView]) -> None:
        for p in pods:
            if p.phase in ("Pending", ""):
                continue
            self.logs[p.uid] = (p, cluster.log(ns, p.name))

    def workers(self, deleted: str = "") -> list[WorkerLog]:
        return [WorkerLog(pod=p.name, node=p.node, index=p.index, replaced=p.uid == deleted, log=parse_log(text))
                for p, text in self.logs.values()]


def _victim(watch: _Watch, pods: list[PodView]) -> tuple[PodView, float] | None:
    """The worker to delete, once it has written a checkpoint: the highest index that is
    running (index 0 often leads the job; a worker's loss is the common case)."""
    running = sorted((p for p in pods if p.phase == "Running"), key=lambda p: -p.index)
    for p in running:
        if p.index == 0 and len(running) > 1:
            continue
        entry = watch.logs.get(p.uid)
        ckpt = parse_log(entry[1]).last("checkpoint") if entry else None
        if ckpt is not None and ckpt.text.get("status") != "failed":
            return p, ckpt.figures["step"]
    return None


def accept(cluster: Cluster, pool: str, documents: list[dict[str, Any]], policy: AcceptancePolicy,
           clock: Clock | None = None, progress: Callable[[str], None] = lambda _m: None) -> Observation:
    """Run the acceptance job ``documents`` (queues first, the Job last) and observe it."""
    clock = clock or WallClock()
    job = documents[-1]
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    obs = Observation(pool=pool, job=name)
    t0 = clock.now()
    cluster.submit(documents)
    progress(f"submitted {name} to queue {job['metadata']['labels'].get('kueue.x-k8s.io/queue-name', '?')}")
    while True:
        view = cluster.job(ns, name)
        if view.admitted:
            obs.admitted, obs.queue_wait_s = True, clock.now() - t0
            break
        if clock.now() - t0 > policy.max_queue_wait_s:
            obs.finished, obs.queue_wait_s = "not-admitted", None
            obs.notes.append(f"still queued after {clock.now() - t0:.0f} s")
            cluster.delete_job(ns, name)  # a queued acceptance must not run later, unwatched
            return obs
        clock.sleep(policy.poll_s)
    progress(f"admitted after {obs.queue_wait_s:.1f} s")
    watch = _Watch()
    deleted: PodView | None = None
    deleted_at = 0.0
    deadline = clock.now() + policy.run_timeout_s
    while True:
        view = cluster.job(ns, name)
        pods = cluster.pods(ns, name)
        watch.read(cluster, ns, pods)
        if deleted is None and not view.finished:
            chosen = _victim(watch, pods)
            if chosen is not None:
                deleted, obs.checkpoint_step = chosen
                obs.deleted_pod = deleted.name
                cluster.delete_pod(ns, deleted.name)
                deleted_at = clock.now()
                progress(f"deleted worker {deleted.name} (index {deleted.index}) after its checkpoint "
                         f"at step {obs.checkpoint_step:g}")
        elif deleted is not None and obs.restore_s is None:
            for p, text in watch.logs.values():
                if p.uid != deleted.uid and p.index == deleted.index:
                    restore = parse_log(text).last("restore")
                    if restore is not None and restore.text.get("status") != "failed":
                        obs.restore_s, obs.restored_step = clock.now() - deleted_at, restore.figures["step"]
                        progress(f"{p.name} resumed from step {obs.restored_step:g} "
                                 f"{obs.restore_s:.1f} s after the deletion")
        if view.finished:
            obs.finished = view.finished  # type: ignore[assignment]
            if view.message:
                obs.notes.append(view.message)
            break
        if clock.now() > deadline:
            obs.finished = "timeout"
            obs.notes.append(f"still running after {policy.run_timeout_s:g} s")
            break
        clock.sleep(policy.poll_s)
    watch.read(cluster, ns, cluster.pods(ns, name))
    obs.workers = watch.workers(deleted.uid if deleted else "")
    cluster.delete_job(ns, name)
    return obs


__all__ = ["Clock", "Cluster", "JobView", "PodView", "WallClock", "accept"]
