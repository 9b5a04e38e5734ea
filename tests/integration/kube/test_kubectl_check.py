"""The real kubectl (v1.32) against the lab API stand-in: every step must pass."""

from __future__ import annotations

import shutil

import pytest

from lab.kubeapi.check import run_kubectl_check

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")]


def test_every_kubectl_step_passes(node_kube):
    results = run_kubectl_check(node_kube.home, ssh_node=node_kube.ssh_node("gpu-b"))
    failed = [f"{step}: {out}" for step, ok, out in results if not ok]
    assert not failed, "\n".join(failed)
    steps = [s for s, _, _ in results]
    for wanted in ("get nodes -L", "label", "taint", "cordon", "uncordon", "drain", "run a pod on a node over SSH",
                   "get pods -w", "logs", "get events (pod)", "node condition (nodes/status)", "describe node",
                   "get events (node)", "cleanup"):
        assert wanted in steps


def test_without_a_node_answering_ssh_the_pod_step_fails(kubeapi):
    results = {step: ok for step, ok, _ in run_kubectl_check(kubeapi.home)}
    assert results["run a pod on a node"] is False
    assert results["drain"] and results["describe node"]  # the rest still runs


def test_check_reports_a_dead_server(tmp_path):
    # no server ever ran here: the check must fail, not pass vacuously
    results = run_kubectl_check(tmp_path)
    assert results and not all(ok for _, ok, _ in results)
