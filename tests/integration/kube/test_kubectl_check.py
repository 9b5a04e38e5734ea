"""The real kubectl (v1.32) against the lab API stand-in: every step must pass."""

from __future__ import annotations

import shutil

import pytest

from lab.kubeapi.check import run_kubectl_check

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")]


def test_every_kubectl_step_passes(kubeapi):
    results = run_kubectl_check(kubeapi.home)
    failed = [f"{step}: {out}" for step, ok, out in results if not ok]
    assert not failed, "\n".join(failed)
    steps = [s for s, _, _ in results]
    for wanted in ("get nodes -L", "label", "taint", "cordon", "uncordon", "drain", "cleanup"):
        assert wanted in steps


def test_check_reports_a_dead_server(tmp_path):
    # no server ever ran here: the check must fail, not pass vacuously
    results = run_kubectl_check(tmp_path)
    assert results and not all(ok for _, ok, _ in results)
