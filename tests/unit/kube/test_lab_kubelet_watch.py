"""Pure parts of the lab API stand-in's kubelet, watch, Events and log serving (no
socket: the store is in memory and SSH is never opened)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.kubeapi import controllers as ctl
from lab.kubeapi import events
from lab.kubeapi.kubelet import Kubelet, admission_failure, container_argv, runs_here
from lab.kubeapi.podlogs import pod_log
from lab.kubeapi.resources import find
from lab.kubeapi.store import ApiStatus, Store
from lab.kubeapi.tables import to_table
from lab.kubeapi.watch import Stream, WatchHub, classify

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "kube"
PODS, NODES, EVENTS = find("", "v1", "pods"), find("", "v1", "nodes"), find("", "v1", "events")


def pod(name="p", node="n1", command=("sh", "-c", "echo hi"), gpus=0, **status):
    c = {"name": "main", "image": "img"}
    if command:
        c["command"] = list(command)
    if gpus:
        c["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"nodeName": node, "containers": [c]}, "status": status}


def test_only_bound_pods_that_name_a_command_are_run():
    assert runs_here(pod())
    assert not runs_here(pod(command=()))
    assert not runs_here(pod(node=""))


def test_container_argv_quotes_and_prefixes_env():
    c = {"command": ["sh", "-c", "echo $X; exit 3"], "args": ["a b"], "env": [{"name": "X", "value": "1 2"},
                                                                            {"name": "S", "valueFrom": {}}]}
    assert container_argv(c) == "env -- BRINGUP_LAB_CONTAINER=1 'X=1 2' sh -c 'echo $X; exit 3' 'a b'"
    assert container_argv({"command": ["true"]}) == "env -- BRINGUP_LAB_CONTAINER=1 true"


def test_gpu_admission_counts_other_pods_on_the_node():
    node = {"metadata": {"name": "n1"}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}}
    assert admission_failure(pod(gpus=8), node, []) is None
    reason, msg = admission_failure(pod(gpus=8), node, [pod("other", gpus=4)])
    assert reason == "OutOfnvidia.com/gpu"
    assert "requested: 8, used: 4, capacity: 8" in msg
    assert admission_failure(pod(gpus=1), {"metadata": {"name": "n1"}, "status": {}}, [])[0] == "OutOfnvidia.com/gpu"


def test_a_pod_the_kubelet_runs_starts_pending_waiting_for_its_container():
    p = pod()
    p["status"] = {}
    ctl.pod_defaults(p)
    assert p["status"]["phase"] == "Pending"
    assert p["status"]["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    sim = pod(command=())
    sim["status"] = {}
    ctl.pod_defaults(sim)
    assert sim["status"]["phase"] == "Running"


def test_watch_replays_from_a_resource_version_and_follows_selectors():
    store = Store()
    hub = WatchHub(store)
    store.create(PODS, "default", pod("a"))
    rv = store.rv
    store.create(PODS, "default", pod("b"))
    cur = store.get(PODS, "default", "a")
    cur["metadata"]["labels"] = {"app": "x"}
    store.replace(PODS, "default", "a", cur)
    store.delete(PODS, "default", "b")
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in
            hub.events(PODS, "default", lambda o: True, str(rv), timeout=0.05)]
    assert seen == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    deleted = list(hub.events(PODS, "default", lambda o: True, str(rv), timeout=0.05))[-1]["object"]
    assert deleted["metadata"]["resourceVersion"] == str(store.rv)
    # from "0": the current objects first, as ADDED
    assert [e["type"] for e in hub.events(PODS, None, lambda o: True, "0", timeout=0.05)] == ["ADDED"]


def test_watch_selector_transitions_and_a_too_old_version():
    match = lambda o: (o["metadata"].get("labels") or {}).get("app") == "x"
    a = pod("a")
    labelled = {**a, "metadata": {**a["metadata"], "labels": {"app": "x"}}}
    assert classify(a, labelled, match)["type"] == "ADDED"
    assert classify(labelled, a, match)["type"] == "DELETED"
    assert classify(a, a, match) is None
    store = Store()
    hub = WatchHub(store, keep=2)
    for i in range(4):
        store.create(PODS, "default", pod(f"p{i}"))
    out = list(hub.events(PODS, None, lambda o: True, "1", timeout=0.05))
    assert out[0]["type"] == "ERROR" and out[0]["object"]["code"] == 410


def test_kubelet_events_count_up_and_name_nodes_by_uid():
    store = Store()
    node = store.create(NODES, "", {"metadata": {"name": "n1"}})
    events.record(store, node, "NodeNotReady", "Node n1 status is now: NodeNotReady", type_="Warning")
    e = events.record(store, node, "NodeNotReady", "Node n1 status is now: NodeNotReady", type_="Warning")
    assert e["count"] == 2 and e["involvedObject"]["uid"] == "n1" and e["metadata"]["namespace"] == "default"
    assert len(store.list(EVENTS, None)[0]) == 1


def test_event_table_matches_the_real_printer_columns():
    want = json.loads((FIX / "event-table-columns.json").read_text())
    real = json.loads((FIX / "event-kubelet-pulling.json").read_text())
    t = to_table("events", [real], "1")
    assert [(c["name"], c["priority"]) for c in t["columnDefinitions"]] == [(c["name"], c["priority"]) for c in want]
    cells = dict(zip([c["name"] for c in want], t["rows"][0]["cells"], strict=True))
    assert cells["Object"] == "pod/stanza-g6rzd" and cells["Subobject"] == "spec.containers{stanza}"
    assert cells["Source"] == "kubelet, kube-master-1" and cells["Count"] == 1
    assert cells["Name"] == "stanza-g6rzd.162ae19292cebe25"


def test_pod_table_status_says_completed_or_error():
    done = pod(phase="Succeeded", containerStatuses=[{"name": "main", "state": {"terminated": {"exitCode": 0,
                                                                                            "reason": "Completed"}}}])
    failed = pod(phase="Failed", containerStatuses=[{"name": "main", "state": {"terminated": {"exitCode": 3}}}])
    rejected = pod(phase="Failed", reason="OutOfnvidia.com/gpu")
    rows = to_table("pods", [done, failed, rejected], "1")["rows"]
    assert [r["cells"][2] for r in rows] == ["Completed", "ExitCode:3", "OutOfnvidia.com/gpu"]


def test_pod_log_serves_the_file_and_refuses_as_the_real_server(tmp_path):
    store = Store()
    kubelet = Kubelet(store, tmp_path, connect=lambda a, p: pytest.fail("no SSH in unit tests"))
    store.create(PODS, "default", pod("done", phase="Succeeded", containerStatuses=[
        {"name": "main", "state": {"terminated": {"exitCode": 0}}}]))
    path = kubelet.log_path("default", "done", "main")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"one\ntwo\nthree\n")
    assert pod_log(store, kubelet, "default", "done", {}) == "one\ntwo\nthree\n"
    assert pod_log(store, kubelet, "default", "done", {"tailLines": "1"}) == "three\n"
    assert pod_log(store, kubelet, "default", "done", {"follow": "true"}) == "one\ntwo\nthree\n"
    with pytest.raises(ApiStatus, match="is not valid for pod done"):
        pod_log(store, kubelet, "default", "done", {"container": "other"})
    store.create(PODS, "default", pod("new", phase="Pending", containerStatuses=[
        {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}]))
    with pytest.raises(ApiStatus, match='"main" in pod "new" is waiting to start: ContainerCreating'):
        pod_log(store, kubelet, "default", "new", {})
    running = pod("run", phase="Running", containerStatuses=[{"name": "main", "state": {"running": {}}}])
    store.create(PODS, "default", running)
    assert isinstance(pod_log(store, kubelet, "default", "run", {"follow": "true"}), Stream)
    store.delete(PODS, "default", "done")
    assert not path.exists()  # a deleted pod's logs go with it


def test_pdb_table_shows_the_budget_and_allowed_disruptions():
    pdb = {"metadata": {"name": "web"}, "spec": {"minAvailable": 1}, "status": {"disruptionsAllowed": 0}}
    t = to_table("poddisruptionbudgets", [pdb], "1")
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Min Available", "Max Unavailable",
                                                            "Allowed Disruptions", "Age"]
    assert t["rows"][0]["cells"][:4] == ["web", "1", "N/A", 0]


def test_node_agent_reports_cordons_renews_the_lease_and_sets_npd_defaults(monkeypatch):
    from lab.kubeapi import nodeagent

    monkeypatch.setattr(nodeagent, "_answers", lambda address, port: True)  # the node's sshd "answers"
    store = Store()
    agent = nodeagent.NodeAgent(store, {"n1": ("127.0.0.9", 2222)})
    store.hooks.append(lambda res, old, new: agent.on_node_write(old, new) if res.plural == "nodes" else None)
    store.create(NODES, "", {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready",
                                                                                    "status": "True"}]}})
    agent.tick()
    node = store.get(NODES, "", "n1")
    conds = {c["type"]: (c["status"], c.get("reason")) for c in node["status"]["conditions"]}
    assert conds == {"Ready": ("True", None), "KernelDeadlock": ("False", "KernelHasNoDeadlock"),
                     "ReadonlyFilesystem": ("False", "FilesystemIsNotReadOnly")}
    lease = store.get(nodeagent.LEASES, "kube-node-lease", "n1")
    assert lease["spec"]["holderIdentity"] == "n1" and lease["spec"]["leaseDurationSeconds"] == 40
    node["spec"] = {"unschedulable": True}
    store.replace(NODES, "", "n1", node)
    agent.tick()
    assert [e["reason"] for e in store.list(EVENTS, None)[0]] == ["NodeNotSchedulable"]
    store.delete(NODES, "", "n1")
    agent.tick()
    assert store.find(nodeagent.LEASES, "kube-node-lease", "n1") is None


def test_events_expire_an_hour_after_they_were_last_seen():
    from lab.kubeapi.nodeagent import expire_events

    store = Store()
    node = store.create(NODES, "", {"metadata": {"name": "n1"}})
    fresh = events.record(store, node, "Fresh", "just now")
    stale = events.record(store, node, "Stale", "long ago")
    stale["lastTimestamp"] = "2020-01-01T00:00:00Z"
    store.replace(EVENTS, "default", stale["metadata"]["name"], stale)
    assert expire_events(store) == 1
    assert [e["metadata"]["name"] for e in store.list(EVENTS, None)[0]] == [fresh["metadata"]["name"]]


def test_a_pod_running_when_the_api_stopped_is_failed_at_the_next_start(tmp_path):
    store = Store()
    store.create(PODS, "default", pod("was-running", phase="Running", containerStatuses=[
        {"name": "main", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]))
    Kubelet(store, tmp_path)._lost_on_restart()
    st = store.get(PODS, "default", "was-running")["status"]
    term = st["containerStatuses"][0]["state"]["terminated"]
    assert st["phase"] == "Failed" and term["reason"] == "ContainerStatusUnknown" and term["exitCode"] == 137
