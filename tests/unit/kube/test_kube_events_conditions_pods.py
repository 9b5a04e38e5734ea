"""Pure parts of the adapter's Events, node conditions and pods modules, against real
API shapes (tests/fixtures/kube)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bringup.errors import ParseError
from bringup.kube.conditions import NodeCondition, condition_patch, node_problems, parse_conditions
from bringup.kube.events import event_name, node_event_body, parse_event
from bringup.kube.pods import GPU, VALIDATION_TAINT, parse_pod_status, pinned_pod

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "kube"


def test_a_real_kubelet_event_parses():
    e = parse_event(json.loads((FIX / "event-kubelet-pulling.json").read_text()))
    assert (e.reason, e.type, e.count, e.source) == ("Pulling", "Normal", 1, "kubelet")
    assert (e.object_kind, e.object_name) == ("Pod", "stanza-g6rzd")
    assert e.first == e.last == "2020-08-13T16:43:57Z"


def test_an_event_without_involved_object_names_its_path():
    with pytest.raises(ParseError) as exc:
        parse_event({"metadata": {"name": "x"}, "reason": "R"})
    assert exc.value.path == "$.involvedObject"


def test_node_event_refers_to_the_node_by_name_as_uid_and_repeats_share_a_name():
    body = node_event_body("gpu-1", "Quarantined", "burn-in failed: XID 79", "Warning", now="2026-01-01T00:00:00Z")
    ref = body["involvedObject"]
    assert ref == {"apiVersion": "v1", "kind": "Node", "name": "gpu-1", "uid": "gpu-1"}
    assert body["metadata"]["namespace"] == "default" and body["count"] == 1
    assert body["source"] == {"component": "bringup"} and body["type"] == "Warning"
    again = node_event_body("gpu-1", "Quarantined", "burn-in failed: XID 79", "Warning")
    assert again["metadata"]["name"] == body["metadata"]["name"]
    assert event_name("gpu-1", "Quarantined", "other", "Warning") != body["metadata"]["name"]
    with pytest.raises(ValueError):
        node_event_body("gpu-1", "X", "y", "Error")


def test_npd_conditions_of_a_healthy_node_are_no_problem():
    conds = parse_conditions({"status": {"conditions": json.loads((FIX / "node-npd-conditions.json").read_text())}})
    assert {c.type for c in conds} >= {"KernelDeadlock", "ReadonlyFilesystem", "Ready"}
    assert node_problems(conds) == []


def test_a_true_npd_condition_or_a_ready_not_true_is_a_problem():
    conds = [NodeCondition(type="Ready", status="Unknown"), NodeCondition(type="KernelDeadlock", status="True"),
             NodeCondition(type="ReadonlyFilesystem", status="False"), NodeCondition(type="GpuHealth", status="Unknown")]
    assert [c.type for c in node_problems(conds)] == ["Ready", "KernelDeadlock"]


def test_condition_patch_moves_the_transition_time_only_on_a_status_change():
    old = [NodeCondition(type="KernelDeadlock", status="False", lastTransitionTime="2026-01-01T00:00:00Z")]
    same = condition_patch(old, "KernelDeadlock", "False", "KernelHasNoDeadlock", "ok", now="2026-02-01T00:00:00Z")
    c = same["status"]["conditions"][0]
    assert c["lastTransitionTime"] == "2026-01-01T00:00:00Z" and c["lastHeartbeatTime"] == "2026-02-01T00:00:00Z"
    moved = condition_patch(old, "KernelDeadlock", "True", "DockerHung", "task docker:7 blocked",
                            now="2026-02-01T00:00:00Z")["status"]["conditions"][0]
    assert moved["lastTransitionTime"] == "2026-02-01T00:00:00Z" and moved["reason"] == "DockerHung"
    with pytest.raises(ValueError):
        condition_patch(old, "KernelDeadlock", "yes", "", "")


def test_pinned_pod_binds_tolerates_and_asks_for_the_gpus():
    pod = pinned_pod("smoke-gpu-1", "gpu-1", "cuda:12.8", ["sh", "-c", "true"], gpus=8, deadline_s=300)
    spec = pod["spec"]
    assert spec["nodeName"] == "gpu-1" and spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] == 300
    assert spec["tolerations"] == [{"key": VALIDATION_TAINT, "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["containers"][0]["resources"] == {"limits": {GPU: "8"}}
    assert "resources" not in pinned_pod("p", "n", "i", ["true"])["spec"]["containers"][0]


def _pod(phase, *states):
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"nodeName": "gpu-1"},
            "status": {"phase": phase, "containerStatuses": [{"name": f"c{i}", "state": s}
                                                             for i, s in enumerate(states)]}}


def test_pod_status_reads_exit_codes_and_states():
    failed = parse_pod_status(_pod("Failed", {"terminated": {"exitCode": 0, "reason": "Completed"}},
                                   {"terminated": {"exitCode": 3, "reason": "Error"}}))
    assert failed.finished and not failed.succeeded and failed.exit_code == 3 and failed.node == "gpu-1"
    ok = parse_pod_status(_pod("Succeeded", {"terminated": {"exitCode": 0, "reason": "Completed"}}))
    assert ok.succeeded and ok.exit_code == 0
    running = parse_pod_status(_pod("Running", {"running": {"startedAt": "x"}}))
    assert not running.finished and running.exit_code is None and running.containers[0].state == "running"
    waiting = parse_pod_status(_pod("Pending", {"waiting": {"reason": "ContainerCreating"}}))
    assert waiting.containers[0].reason == "ContainerCreating"
    rejected = parse_pod_status({"metadata": {"name": "p"}, "status": {"phase": "Failed", "reason": "OutOfnvidia.com/gpu"}})
    assert rejected.finished and rejected.reason == "OutOfnvidia.com/gpu" and rejected.exit_code is None
    with pytest.raises(ParseError):
        parse_pod_status({"metadata": {"name": "p"}, "status": {"containerStatuses": [{"state": {}}]}})


def test_an_event_that_cannot_be_written_never_fails_the_change(monkeypatch):
    from kubernetes import client as k8s

    from bringup.errors import KubeTransientError
    from bringup.kube import KubeAdapter
    from bringup.kube import events as ev

    def down(*a, **kw):
        raise KubeTransientError("record event: API server unreachable")
    monkeypatch.setattr(ev, "record_node_event", down)
    KubeAdapter(k8s.ApiClient())._note("gpu-1", "Cordoned", "cordoned by bringup")  # logged, not raised


def test_a_long_event_message_is_capped_at_the_api_limit():
    body = node_event_body("gpu-1", "Quarantined", "x" * 5000, "Warning")
    assert len(body["message"]) == 1024 and body["message"].endswith("...")
