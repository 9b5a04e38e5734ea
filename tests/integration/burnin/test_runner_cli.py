"""The agent's runner without GPUs: plan validation, unknown checks, sysfs-driven checks."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


REPO = Path(__file__).resolve().parents[3]


def test_cli_bad_plan_exits_2_with_json(tmp_path):
    (tmp_path / "plan.json").write_text("{}")
    p = subprocess.run([sys.executable, "-m", "burnin", "run", "--plan", str(tmp_path / "plan.json")],
                       capture_output=True, text=True, cwd=REPO, timeout=30, check=False)
    assert p.returncode == 2 and "bad plan" in json.loads(p.stdout)["error"]


def test_gpu_checks_without_a_driver_are_errors_not_passes(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(tmp_path), "PYTHONPATH": str(REPO)}
    (tmp_path / "plan.json").write_text(json.dumps({"schema_version": 1, "checks": ["inventory", "ecc"]}))
    p = subprocess.run([sys.executable, "-m", "burnin", "run", "--plan", str(tmp_path / "plan.json")],
                       capture_output=True, text=True, env=env, timeout=30, check=False)
    doc = json.loads(p.stdout)
    assert p.returncode == 1
    assert [c["status"] for c in doc["checks"]] == ["error", "error"]
    assert doc["checks"][0]["findings"][0]["code"] == "nvml_unavailable"
