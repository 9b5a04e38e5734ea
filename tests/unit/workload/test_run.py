"""The acceptance run's logic against a scripted cluster and a stepping clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from bringup.kube.jobs import JobView, PodView
from bringup.workload.policy import AcceptancePolicy, judge
from bringup.workload.run import accept

POLICY = AcceptancePolicy(reference_samples_per_s=1000, max_queue_wait_s=10, max_restore_s=20,
                          run_timeout_s=100, poll_s=1)
DOCS = [{"kind": "LocalQueue", "metadata": {"name": "q", "namespace": "ns"}},
        {"kind": "Job", "metadata": {"name": "accept-p-r1", "namespace": "ns",
                                     "labels": {"kueue.x-k8s.io/queue-name": "p"}}}]
HEAD = ("bringup-accept phase=data seconds=1 bytes=1\nbringup-accept phase=weights seconds=1 bytes=1\n"
        "bringup-accept phase=comm busbw_gbps=3\nbringup-accept phase=train step=5 samples_per_s=600 loss=1\n")
CKPT = "bringup-accept phase=checkpoint step=5 seconds=0.1\n"
DONE = "bringup-accept phase=done steps=9 loss_first=5 loss_last=0.1\n"


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


@dataclass
class FakeCluster:
    """Two workers; each poll (one clock second) moves the script on. ``admit_at``: the
    second Kueue admits (None: never); ``restore``: the replacement's restore line."""

    clock: Clock
    admit_at: float | None = 2
    restore: str = "bringup-accept phase=restore step=5 seconds=0.1\n"
    restore_after: float = 3
    submitted: list = field(default_factory=list)
    deleted: list = field(default_factory=list)
    jobs_deleted: list = field(default_factory=list)
    pods_: dict = field(default_factory=dict)
    texts: dict = field(default_factory=dict)
    replaced_at: float | None = None

    def submit(self, docs):
        self.submitted += docs

    def job(self, ns, name):
        admitted = self.admit_at is not None and self.clock.t >= self.admit_at
        if admitted and not self.pods_:
            for i in (0, 1):
                self.pods_[f"u{i}"] = PodView(f"w{i}", f"u{i}", i, f"n{i}", "Running")
                self.texts[f"u{i}"] = ""
        finished = ""
        if self.replaced_at is not None and self.clock.t >= self.replaced_at + self.restore_after + 2:
            finished = "succeeded" if "status=failed" not in self.restore else "failed"
        return JobView(admitted=admitted, finished=finished)

    def pods(self, ns, job):
        t = self.clock.t
        for uid, _p in self.pods_.items():
            if uid in ("u0", "u1"):
                self.texts[uid] = HEAD + (CKPT if t >= (self.admit_at or 0) + 2 else "") + (
                    DONE if uid == "u0" and self.replaced_at is not None else "")
            elif uid == "u1b" and t >= self.replaced_at + self.restore_after:
                self.texts[uid] = HEAD + self.restore + ("" if "status=failed" in self.restore else DONE)
        return list(self.pods_.values())

    def log(self, ns, pod):
        uid = next(u for u, p in self.pods_.items() if p.name == pod)
        return self.texts[uid]

    def delete_pod(self, ns, pod):
        self.deleted.append((pod, self.clock.t))
        uid = next(u for u, p in self.pods_.items() if p.name == pod)
        index = self.pods_.pop(uid).index
        self.pods_["u1b"] = PodView("w1b", "u1b", index, "n1", "Running")
        self.texts["u1b"] = ""
        self.replaced_at = self.clock.t

    def delete_job(self, ns, name):
        self.jobs_deleted.append(name)


def test_a_run_times_the_queue_deletes_a_worker_after_its_checkpoint_and_times_the_restore():
    clock = Clock()
    cluster = FakeCluster(clock)
    said = []
    obs = accept(cluster, "p", DOCS, POLICY, clock=clock, progress=said.append)
    assert cluster.submitted == DOCS
    assert obs.admitted and obs.queue_wait_s == 2
    assert [name for name, _ in cluster.deleted] == ["w1"]        # the highest index, never index 0
    assert obs.deleted_pod == "w1" and obs.checkpoint_step == 5
    assert obs.restore_s == 3 and obs.restored_step == 5
    assert obs.finished == "succeeded" and cluster.jobs_deleted == ["accept-p-r1"]
    replaced = [w for w in obs.workers if w.replaced]
    assert [w.pod for w in replaced] == ["w1"]                    # its log was kept from before the deletion
    assert judge(obs, POLICY).outcome == "pass"
    assert any("deleted worker w1" in s for s in said)


def test_a_job_never_admitted_is_deleted_and_fails():
    clock = Clock()
    cluster = FakeCluster(clock, admit_at=None)
    obs = accept(cluster, "p", DOCS, POLICY, clock=clock)
    assert not obs.admitted and obs.finished == "not-admitted" and obs.workers == []
    assert cluster.jobs_deleted == ["accept-p-r1"] and clock.t <= POLICY.max_queue_wait_s + 2
    v = judge(obs, POLICY)
    assert v.outcome == "fail" and "never admitted" in v.reasons[0]


def test_a_replacement_that_cannot_read_the_checkpoint_has_no_restore_time_and_fails():
    clock = Clock()
    cluster = FakeCluster(clock, restore='bringup-accept phase=restore status=failed reason="unreadable"\n')
    obs = accept(cluster, "p", DOCS, POLICY, clock=clock)
    assert obs.restore_s is None and obs.finished == "failed"
    v = judge(obs, POLICY)
    assert v.outcome == "fail" and any("phase restore failed: unreadable" in r for r in v.reasons)


def test_a_run_that_never_ends_stops_at_its_deadline():
    clock = Clock()
    cluster = FakeCluster(clock, restore_after=10_000)
    obs = accept(cluster, "p", DOCS, POLICY.model_copy(update={"run_timeout_s": 30}), clock=clock)
    assert obs.finished == "timeout" and obs.restore_s is None
    assert judge(obs, POLICY).outcome == "fail"
