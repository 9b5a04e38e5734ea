"""The lab API stand-in's Job controller and Kueue admission, on its store in process."""

from __future__ import annotations

from bringup.workload.manifests import render_job, render_queues, storage_from
from bringup.workload.policy import AcceptancePolicy
from lab.kubeapi.jobs import CLUSTERQUEUES, JOBS, LOCALQUEUES, NODES, PODS, WORKLOADS, JobController
from lab.kubeapi.store import Store

POLICY = AcceptancePolicy(gpus_per_worker=8, command=["python", "t.py"], backoff_limit=2)


def _store(nodes=("n1", "n2", "n3"), stop=None, quota_nodes=2):
    store = Store(None)
    for i, n in enumerate(nodes):
        store.create(NODES, "", {"metadata": {"name": n, "labels": {"bringup.io/pool": "p" if i < 2 else "q"}},
                                 "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    cq, lq = render_queues("p", quota_nodes, POLICY)
    if stop:
        cq["spec"]["stopPolicy"] = stop
    store.create(CLUSTERQUEUES, "", cq)
    store.create(LOCALQUEUES, "bringup-system", lq)
    store.create(JOBS, "bringup-system", render_job("p", "r1", ["n1", "n2"], "img", storage_from(
        type("S", (), {"acceptance_data": "/d", "acceptance_weights": "/w", "acceptance_checkpoints": "/c"})),
        POLICY))
    return store, JobController(store)


def _pods(store):
    pods, _ = store.list(PODS, "bringup-system")
    return sorted(pods, key=lambda p: p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"])


def _job(store):
    return store.get(JOBS, "bringup-system", "accept-p-r1")


def _finish(store, pod, phase):
    pod["status"]["phase"] = phase
    store.replace(PODS, "bringup-system", pod["metadata"]["name"], pod, check_rv=False)


def test_an_admitted_job_gets_one_pod_per_index_on_its_pools_nodes():
    store, jobs = _store()
    jobs.tick()
    (wl,) = store.list(WORKLOADS, "bringup-system")[0]
    assert {c["type"]: c["status"] for c in wl["status"]["conditions"]} == {"QuotaReserved": "True",
                                                                              "Admitted": "True"}
    assert _job(store)["spec"]["suspend"] is False
    jobs.tick()
    pods = _pods(store)
    assert [p["spec"]["nodeName"] for p in pods] == ["n1", "n2"]          # n3 is another pool's
    env = {e["name"]: e["value"] for e in pods[1]["spec"]["containers"][0]["env"]}
    assert env["JOB_COMPLETION_INDEX"] == "1" and pods[1]["status"]["phase"] == "Pending"


def test_a_deleted_worker_is_replaced_with_its_index_and_success_completes_the_job():
    store, jobs = _store()
    jobs.tick()
    jobs.tick()
    first = _pods(store)
    store.delete(PODS, "bringup-system", first[1]["metadata"]["name"])
    jobs.tick()
    pods = _pods(store)
    assert len(pods) == 2 and pods[1]["metadata"]["name"] != first[1]["metadata"]["name"]
    assert pods[1]["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "1"
    assert _job(store)["status"]["failed"] == 1
    for p in pods:
        _finish(store, p, "Succeeded")
    jobs.tick()
    assert [c["type"] for c in _job(store)["status"]["conditions"]] == ["Complete"]


def test_failures_past_the_backoff_limit_fail_the_job():
    store, jobs = _store()
    jobs.tick()
    for _ in range(3):
        jobs.tick()
        _finish(store, [p for p in _pods(store) if p["status"]["phase"] == "Pending"][-1], "Failed")
    jobs.tick()
    cond = _job(store)["status"]["conditions"][0]
    assert cond["type"] == "Failed" and cond["reason"] == "BackoffLimitExceeded"
    assert not [p for p in _pods(store) if p["status"]["phase"] in ("Pending", "Running")]


def test_a_held_or_too_small_cluster_queue_never_admits():
    for store, jobs, says in [(*_store(stop="Hold"), "is inactive"), (*_store(quota_nodes=1), "insufficient quota")]:
        for _ in range(3):
            jobs.tick()
        (wl,) = store.list(WORKLOADS, "bringup-system")[0]
        cond = wl["status"]["conditions"][0]
        assert cond["type"] == "QuotaReserved" and cond["status"] == "False" and says in cond["message"]
        assert _job(store)["spec"]["suspend"] is True and _pods(store) == []


def test_a_deleted_job_takes_its_pods_and_workload_with_it():
    store, jobs = _store()
    jobs.tick()
    jobs.tick()
    store.delete(JOBS, "bringup-system", "accept-p-r1")
    jobs.tick()
    assert _pods(store) == [] and store.list(WORKLOADS, None)[0] == []
