"""The stand-in kubelet running pods on lab nodes over SSH, Events and node conditions
written through the adapter, and watches, all read back with the real kubectl."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from bringup.kube import conditions, events, pods

pytestmark = pytest.mark.integration


def wait_finished(kube, name: str, timeout: float = 30) -> pods.PodStatus:
    return pods.wait_pod(kube, "default", name, timeout, poll=0.2)


def test_a_pod_runs_its_command_on_its_node_and_kubectl_logs_prints_the_output(node_kube):
    kube = node_kube.kube
    script = 'echo "running on $BRINGUP_NODE"; ls "$BRINGUP_SYSROOT/usr/local/bin"; echo to-stderr >&2'
    pods.create_pod(kube, pods.pinned_pod("smoke-ok", "gpu-a", "cuda:12.8", ["sh", "-c", script], gpus=8))
    st = wait_finished(kube, "smoke-ok")
    assert st.succeeded and st.exit_code == 0, st
    assert st.containers[0].reason == "Completed"
    assert kube.node_state("gpu-a").allocatable["nvidia.com/gpu"] == "8"
    log = pods.pod_log(kube, "default", "smoke-ok")
    assert "running on gpu-a" in log and "dcgmi" in log and "to-stderr" in log  # the node's own tools
    out = node_kube.kubectl("logs", "smoke-ok")
    assert out.returncode == 0 and out.stdout == log
    assert "Completed" in node_kube.kubectl("get", "pod", "smoke-ok").stdout
    described = node_kube.kubectl("describe", "pod", "smoke-ok").stdout
    assert "Started container main" in described and "bringup.io/validation-pending:NoSchedule" in described


def test_a_failing_command_fails_the_pod_with_its_exit_code(node_kube):
    kube = node_kube.kube
    pods.create_pod(kube, pods.pinned_pod("smoke-bad", "gpu-b", "cuda", ["sh", "-c", "echo broken; exit 7"]))
    st = wait_finished(kube, "smoke-bad")
    assert st.phase == "Failed" and st.exit_code == 7 and st.containers[0].reason == "Error", st
    assert node_kube.kubectl("logs", "smoke-bad", "--tail=1").stdout == "broken\n"
    code = node_kube.kubectl("get", "pod", "smoke-bad", "-o",
                             "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}").stdout
    assert code == "7"
    assert "Error" in node_kube.kubectl("get", "pod", "smoke-bad").stdout
    assert pods.delete_pod(kube, "default", "smoke-bad") and not pods.delete_pod(kube, "default", "smoke-bad")


def test_a_pod_asking_for_more_gpus_than_the_node_has_is_rejected(node_kube):
    kube = node_kube.kube
    pods.create_pod(kube, pods.pinned_pod("too-big", "gpu-b", "cuda", ["true"], gpus=16))
    st = wait_finished(kube, "too-big")
    assert st.phase == "Failed" and st.reason == "OutOfnvidia.com/gpu" and st.exit_code is None, st
    assert "requested: 16" in st.message
    out = node_kube.kubectl("get", "events", "--field-selector", "involvedObject.name=too-big").stdout
    assert "OutOfnvidia.com/gpu" in out and "Warning" in out


def test_a_pod_watch_sees_every_phase(node_kube):
    kube = node_kube.kube
    seen: list[tuple[str, str]] = []

    def watch() -> None:
        for kind, st in pods.watch_pods(kube, "default", field_selector="metadata.name=watched", timeout_s=15):
            seen.append((kind, st.phase))
            if st.finished:
                return
    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.5)
    pods.create_pod(kube, pods.pinned_pod("watched", "gpu-a", "cuda", ["sh", "-c", "sleep 1; echo done"]))
    t.join(20)
    assert [p for _, p in seen] == ["Pending", "Running", "Succeeded"], seen
    assert seen[0][0] == "ADDED" and {k for k, _ in seen[1:]} == {"MODIFIED"}


def test_events_through_the_adapter_show_in_get_events_and_describe_node(node_kube):
    kube = node_kube.kube
    msg = "quarantined by bringup: burn-in failed (XID 79 on GPU 3)"
    events.record_node_event(kube, "gpu-a", "Quarantined", msg, events.WARNING)
    again = events.record_node_event(kube, "gpu-a", "Quarantined", msg, events.WARNING)
    assert again.count == 2
    events.record_node_event(kube, "gpu-a", "Admitted", "admitted to pool train", events.NORMAL)
    got = events.node_events(kube, "gpu-a")
    assert [e.reason for e in got if e.source == "bringup"] == ["Quarantined", "Admitted"]
    listed = node_kube.kubectl("get", "events", "-o", "wide").stdout
    row = next(line for line in listed.splitlines() if "Quarantined" in line)
    assert "Warning" in row and "node/gpu-a" in row and msg in row and "bringup" in row
    described = node_kube.kubectl("describe", "node", "gpu-a").stdout.split("\nEvents:", 1)[1]
    assert "Quarantined" in described and "(x2 over" in described and "Admitted" in described


def test_a_node_condition_set_through_the_api_shows_in_describe_node(node_kube):
    kube = node_kube.kube
    conds = conditions.set_node_condition(kube, "gpu-b", "KernelDeadlock", "True", "DockerHung",
                                          "task docker:7 blocked for more than 300 seconds.")
    assert [c.type for c in conditions.node_problems(conds)] == ["KernelDeadlock"]
    first = next(c for c in conds if c.type == "KernelDeadlock").lastTransitionTime
    out = node_kube.kubectl("describe", "node", "gpu-b").stdout
    section = out.split("Conditions:", 1)[1].split("Addresses:", 1)[0]
    row = next(line for line in section.splitlines() if "KernelDeadlock" in line)
    assert "True" in row and "DockerHung" in row and "blocked for more than 300 seconds" in row
    assert node_kube.kube.node_state("gpu-b").ready  # Ready is untouched by the merge
    time.sleep(1.1)
    healed = conditions.set_node_condition(kube, "gpu-b", "KernelDeadlock", "False", "KernelHasNoDeadlock",
                                           "kernel has no deadlock")
    assert conditions.node_problems(healed) == []
    assert next(c for c in healed if c.type == "KernelDeadlock").lastTransitionTime != first


def test_a_node_watch_sees_a_cordon_and_the_kubelet_reports_it(node_kube):
    kube = node_kube.kube
    seen: list[tuple[str, bool]] = []

    def watch() -> None:
        for kind, node in pods.watch_nodes(kube, timeout_s=10):
            if node.name == "gpu-b":
                seen.append((kind, node.unschedulable))
                if node.unschedulable:
                    return
    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.5)
    kube.cordon("gpu-b")
    t.join(15)
    assert seen[0] == ("ADDED", False) and seen[-1] == ("MODIFIED", True), seen
    deadline = time.monotonic() + 10
    while "NodeNotSchedulable" not in [e.reason for e in events.node_events(kube, "gpu-b")]:
        assert time.monotonic() < deadline, "the kubelet did not report the cordon"
        time.sleep(0.2)
    kube.uncordon("gpu-b")


def test_quarantine_admission_and_drain_leave_events_an_operator_can_read(node_kube):
    kube = node_kube.kube
    kube.quarantine("gpu-a", "burn-in failed: GPU 3 row remap pending", code="burnin-row-remap")
    kube.admit("gpu-a", {"bringup.io/pool": "train"})
    kube.drain("gpu-a", timeout=10)
    kube.uncordon("gpu-a", "re-burn-in passed")
    reasons = [e.reason for e in events.node_events(kube, "gpu-a") if e.source == "bringup"]
    for wanted in ("Quarantined", "Admitted", "Cordoned", "Drained", "Uncordoned"):
        assert wanted in reasons
    described = node_kube.kubectl("describe", "node", "gpu-a").stdout.split("\nEvents:", 1)[1]
    row = next(line for line in described.splitlines() if "Quarantined" in line and "row remap" in line)
    assert row.split()[0] == "Warning" and "bringup.io/quarantine=burnin-row-remap:NoSchedule" in row
    assert "admitted by bringup" in described and "pool train" in described


def test_fleet_nodes_carry_the_npd_default_conditions(node_kube):
    deadline = time.monotonic() + 10
    while True:
        conds = {c.type: c for c in conditions.node_conditions(node_kube.kube, "gpu-a")}
        if "ReadonlyFilesystem" in conds or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert conds["ReadonlyFilesystem"].status == "False" and conds["ReadonlyFilesystem"].reason == \
        "FilesystemIsNotReadOnly"
    assert "KernelDeadlock" in conds and not conditions.node_problems(list(conds.values()))
    lease = node_kube.kubectl("get", "lease", "gpu-a", "-n", "kube-node-lease", "-o",
                              "jsonpath={.spec.holderIdentity} {.spec.renewTime}").stdout.split()
    assert lease[0] == "gpu-a" and lease[1].endswith("Z")
    assert "HolderIdentity:  gpu-a" in node_kube.kubectl("describe", "node", "gpu-a").stdout


def test_a_pod_past_its_active_deadline_is_killed_and_failed(node_kube):
    kube = node_kube.kube
    pods.create_pod(kube, pods.pinned_pod("hangs", "gpu-b", "cuda", ["sh", "-c", "echo start; sleep 59.75"],
                                          deadline_s=1))
    t0 = time.monotonic()
    assert not pods.wait_pod(kube, "default", "hangs", timeout=0.3, poll=0.1).finished  # time ran out first
    st = wait_finished(kube, "hangs", timeout=20)
    assert time.monotonic() - t0 < 10
    assert st.phase == "Failed" and st.reason == "DeadlineExceeded" and st.exit_code == 137, st
    assert pods.pod_log(kube, "default", "hangs") == "start\n"
    time.sleep(0.5)
    assert not running("sleep 59.75"), "the command outlived its pod's deadline on the node"


def running(cmdline: str) -> list[str]:
    out = []
    for proc in Path("/proc").iterdir():
        try:
            text = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text.strip() == cmdline:
            out.append(proc.name)
    return out


def test_two_pods_wanting_every_gpu_at_once_one_runs_the_other_is_refused(node_kube):
    kube = node_kube.kube
    for name in ("all-gpus-1", "all-gpus-2"):
        pods.create_pod(kube, pods.pinned_pod(name, "gpu-a", "cuda", ["sh", "-c", "sleep 1"], gpus=8))
    done = sorted((wait_finished(kube, n) for n in ("all-gpus-1", "all-gpus-2")), key=lambda s: s.phase)
    assert [s.phase for s in done] == ["Failed", "Succeeded"], done
    assert done[0].reason == "OutOfnvidia.com/gpu" and "used: 8" in done[0].message


def test_kubectl_logs_follow_streams_until_the_command_ends(node_kube):
    kube = node_kube.kube
    script = "for i in 1 2 3; do echo tick $i; sleep 0.5; done"
    pods.create_pod(kube, pods.pinned_pod("ticks", "gpu-b", "cuda", ["sh", "-c", script]))
    deadline = time.monotonic() + 10
    while pods.read_pod(kube, "default", "ticks").phase == "Pending":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    t0 = time.monotonic()
    out = node_kube.kubectl("logs", "-f", "ticks")
    assert out.returncode == 0 and out.stdout == "tick 1\ntick 2\ntick 3\n", out
    assert time.monotonic() - t0 < 8
    assert pods.read_pod(kube, "default", "ticks").succeeded
