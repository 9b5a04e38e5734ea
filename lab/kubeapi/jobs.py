"""Stand-in Job controller and Kueue admission, run from the kubelet's loop.

Only what the pool acceptance run needs (issue #28):

* **Kueue** (https://kueue.sigs.k8s.io/docs/concepts/): a Job labelled
  ``kueue.x-k8s.io/queue-name`` and created suspended gets a ``Workload``; it is admitted
  (``QuotaReserved`` and ``Admitted`` True, the Job unsuspended) when the named
  ``LocalQueue`` exists in its namespace, its ``ClusterQueue`` exists, is not stopped
  (``spec.stopPolicy`` ``Hold`` or ``HoldAndDrain``) and its ``nvidia.com/gpu`` nominal quota,
  less what admitted Workloads hold, covers the Job's pods. Otherwise the Workload's
  ``QuotaReserved`` is False with the reason, and the Job stays suspended (a job never
  admitted is thus a ClusterQueue held or too small: data, not a code path).
* **Jobs** (``completionMode: Indexed``, or NonIndexed as indexes all the same): one pod
  per index not yet succeeded, labelled and annotated with its index and with
  ``JOB_COMPLETION_INDEX`` in its containers' environment, bound to a Ready, schedulable
  node matching the template's ``nodeSelector`` that runs no other pod of the Job (the
  scheduler's part, with required pod anti-affinity per hostname assumed). A pod gone
  (deleted) or Failed is replaced while the Job's failures stay within ``backoffLimit``;
  past it the Job is ``Failed`` (``BackoffLimitExceeded``) and its running pods are
  deleted; every index succeeded: ``Complete``. A deleted Job's pods are deleted
  (background propagation).
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from .resources import find
from .store import ApiStatus, Store, now_rfc3339

JOBS = find("batch", "v1", "jobs")
PODS = find("", "v1", "pods")
NODES = find("", "v1", "nodes")
LOCALQUEUES = find("kueue.x-k8s.io", "v1beta1", "localqueues")
CLUSTERQUEUES = find("kueue.x-k8s.io", "v1beta1", "clusterqueues")
WORKLOADS = find("kueue.x-k8s.io", "v1beta1", "workloads")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
INDEX = "batch.kubernetes.io/job-completion-index"
JOB_NAME = "batch.kubernetes.io/job-name"
CREATED = "lab.bringup.io/pods-created"
GPU = "nvidia.com/gpu"


def _gpus(job: dict[str, Any]) -> int:
    per_pod = 0
    for c in job["spec"]["template"]["spec"].get("containers") or []:
        limits = (c.get("resources") or {}).get("limits") or {}
        per_pod += int(str(limits.get(GPU, 0)))
    return per_pod * int(job["spec"].get("parallelism") or 1)


def _cond(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": now_rfc3339()}


class JobController:
    def __init__(self, store: Store) -> None:
        self.store = store

    def tick(self) -> None:
        jobs, _ = self.store.list(JOBS, None)
        names = {(j["metadata"]["namespace"], j["metadata"]["name"]) for j in jobs}
        orphans, _ = self.store.list(PODS, None, lambda p: JOB_NAME in (p["metadata"].get("labels") or {}))
        for pod in orphans:
            if (pod["metadata"]["namespace"], pod["metadata"]["labels"][JOB_NAME]) not in names:
                self._delete_pod(pod)
        wls, _ = self.store.list(WORKLOADS, None)
        for wl in wls:  # a Workload goes with its Job
            owner = next(iter(wl["metadata"].get("ownerReferences") or []), {}).get("name", "")
            if (wl["metadata"]["namespace"], owner) not in names:
                self.store.delete(WORKLOADS, wl["metadata"]["namespace"], wl["metadata"]["name"])
        for job in jobs:
            if any(c.get("status") == "True" and c.get("type") in ("Complete", "Failed")
                   for c in (job.get("status") or {}).get("conditions") or []):
                continue
            if job["spec"].get("suspend"):
                if QUEUE_LABEL in (job["metadata"].get("labels") or {}):
                    self._queue(job)
                continue
            self._run(job)

    def _delete_pod(self, pod: dict[str, Any]) -> None:
        try:
            self.store.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
        except ApiStatus:
            pass  # gone already

    # --- Kueue ---------------------------------------------------------------------------
    def _queue(self, job: dict[str, Any]) -> None:
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        wl_name = f"job-{name}"[:63]
        wl = self.store.find(WORKLOADS, ns, wl_name)
        if wl is None:
            wl = self.store.create(WORKLOADS, ns, {
                "metadata": {"name": wl_name, "labels": {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]},
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                                  "uid": job["metadata"]["uid"], "controller": True}]},
                "spec": {"queueName": job["metadata"]["labels"][QUEUE_LABEL],
                         "podSets": [{"name": "main", "count": int(job["spec"].get("parallelism") or 1)}]},
                "status": {}})
        refusal = self._refusal(job, wl)
        conds = [_cond("QuotaReserved", "False", "Pending", refusal)] if refusal else [
            _cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue"),
            _cond("Admitted", "True", "Admitted", "The workload is admitted")]
        if [c["message"] for c in (wl.get("status") or {}).get("conditions") or []] != [c["message"] for c in conds]:
            wl["status"] = {"conditions": conds}
            if not refusal:
                lq = self.store.find(LOCALQUEUES, ns, wl["spec"]["queueName"])
                wl["status"]["admission"] = {"clusterQueue": lq["spec"]["clusterQueue"], "gpus": _gpus(job)}
            self.store.replace(WORKLOADS, ns, wl_name, wl, check_rv=False)
        if not refusal:
            job["spec"]["suspend"] = False
            job.setdefault("status", {})["startTime"] = now_rfc3339()
            self.store.replace(JOBS, ns, name, job, check_rv=False)

    def _refusal(self, job: dict[str, Any], wl: dict[str, Any]) -> str:
        """Why Kueue does not admit the Workload now ("" when it does)."""
        ns = job["metadata"]["namespace"]
        lq = self.store.find(LOCALQUEUES, ns, wl["spec"]["queueName"])
        if lq is None:
            return f"LocalQueue {wl['spec']['queueName']} doesn't exist"
        cq_name = (lq.get("spec") or {}).get("clusterQueue", "")
        cq = self.store.find(CLUSTERQUEUES, "", cq_name)
        if cq is None:
            return f"ClusterQueue {cq_name} doesn't exist"
        if (cq.get("spec") or {}).get("stopPolicy") in ("Hold", "HoldAndDrain"):
            return f"ClusterQueue {cq_name} is inactive"
        quota = sum(int(str(r.get("nominalQuota", 0)))
                    for g in (cq.get("spec") or {}).get("resourceGroups") or []
                    for f in g.get("flavors") or [] for r in f.get("resources") or [] if r.get("name") == GPU)
        others, _ = self.store.list(WORKLOADS, None, lambda w: w["metadata"]["uid"] != wl["metadata"]["uid"]
                                    and ((w.get("status") or {}).get("admission") or {}).get("clusterQueue") == cq_name)
        held = sum(int((w["status"]["admission"]).get("gpus", 0)) for w in others)
        if _gpus(job) + held > quota:
            return (f"couldn't assign flavors to pod set main: insufficient quota for {GPU} in ClusterQueue "
                    f"{cq_name}: request {_gpus(job)}, available {quota - held}")
        return ""

    # --- the Job's pods ------------------------------------------------------------------
    def _run(self, job: dict[str, Any]) -> None:
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        before = copy.deepcopy(job)
        pods, _ = self.store.list(PODS, ns, lambda p: (p["metadata"].get("labels") or {}).get(JOB_NAME) == name)
        completions = int(job["spec"].get("completions") or 1)
        active = [p for p in pods if (p.get("status") or {}).get("phase") in ("Pending", "Running")]
        succeeded = {int(p["metadata"]["labels"][INDEX]) for p in pods if p["status"].get("phase") == "Succeeded"}
        created = int(job["metadata"].get("annotations", {}).get(CREATED, "0"))
        failed = created - len(active) - len(succeeded)
        status = job.setdefault("status", {})
        status.update({"active": len(active), "succeeded": len(succeeded), "failed": max(failed, 0)})
        if failed > int(job["spec"].get("backoffLimit", 6)):
            for p in active:
                self._delete_pod(p)
            status["active"] = 0
            status["conditions"] = [_cond("Failed", "True", "BackoffLimitExceeded",
                                          "Job has reached the specified backoff limit")]
        elif len(succeeded) >= completions:
            status["conditions"] = [_cond("Complete", "True", "", "")]
            status["completionTime"] = now_rfc3339()
        else:
            running = {int(p["metadata"]["labels"][INDEX]) for p in active}
            busy = {p["spec"].get("nodeName") for p in active}
            for index in range(completions):
                if index in succeeded or index in running:
                    continue
                node = self._node(job, busy)
                if node is None:
                    break  # unschedulable for now: the next tick tries again
                busy.add(node)
                self._create_pod(job, index, node)
                created += 1
            job["metadata"].setdefault("annotations", {})[CREATED] = str(created)
        if job != before:  # every write wakes the loop again: write only what changed
            self.store.replace(JOBS, ns, name, job, check_rv=False)

    def _node(self, job: dict[str, Any], busy: set[str]) -> str | None:
        selector = job["spec"]["template"]["spec"].get("nodeSelector") or {}
        nodes, _ = self.store.list(NODES, None)
        for n in sorted(nodes, key=lambda n: n["metadata"]["name"]):
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (n.get("status") or {}).get("conditions") or [])
            if (ready and not (n.get("spec") or {}).get("unschedulable") and n["metadata"]["name"] not in busy
                    and all((n["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())):
                return n["metadata"]["name"]
        return None

    def _create_pod(self, job: dict[str, Any], index: int, node: str) -> None:
        from .controllers import admit  # controllers imports the kubelet, which imports this module

        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        tmpl = job["spec"]["template"]
        spec = {**tmpl["spec"], "nodeName": node}
        spec["containers"] = [{**c, "env": [*(c.get("env") or []), {"name": "JOB_COMPLETION_INDEX",
                                                                      "value": str(index)}]}
                              for c in tmpl["spec"].get("containers") or []]
        labels = {**((tmpl.get("metadata") or {}).get("labels") or {}), JOB_NAME: name, "job-name": name,
                  INDEX: str(index)}
        pod = {"metadata": {"name": f"{name}-{index}-{uuid.uuid4().hex[:5]}", "labels": labels,
                            "annotations": {INDEX: str(index)},
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                                 "uid": job["metadata"]["uid"], "controller": True}]},
               "spec": spec}
        admit("pods", pod)
        self.store.create(PODS, ns, pod)
