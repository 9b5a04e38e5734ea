"""``bringup parse`` as a process: JSON on stdout and exit 0 for an understood output, a
one-line error and exit 2 for an output with no result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
FIX = REPO / "tests" / "fixtures"


def bringup(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from bringup_cli import main; main()", *args], cwd=REPO,
                          input=stdin, capture_output=True, text=True, timeout=120, check=False)


def test_parse_nccl_json_with_sku():
    p = bringup("parse", "nccl", str(FIX / "nccl-tests" / "awsome-batch-p5-tag-output.txt"), "--sku", "hgx-h100-80gb",
                "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert set(doc) == {"tool", "ok", "findings", "figures"}
    assert doc["tool"] == "nccl" and doc["ok"] is True and doc["findings"] == []
    assert doc["figures"]["busbw_gbps"] == 480.43 and doc["figures"]["rows"] == 32 and doc["figures"]["wrong"] == 0


def test_parse_gpu_burn_that_gpu_burn_calls_ok_is_not_ok():
    p = bringup("parse", "gpu-burn", str(FIX / "gpu-burn" / "issue7-init-failed-6gpu.txt"), "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ok"] is False and doc["figures"]["faulty"] == [0, 1, 2, 3, 4, 5]
    assert {f["severity"] for f in doc["findings"]} == {"fail"}
    assert all(set(f) == {"severity", "check", "message"} for f in doc["findings"])


def test_parse_dcgm_and_ibstat_from_stdin():
    p = bringup("parse", "dcgm", "-", "--json", stdin=(FIX / "dcgm" / "dcgm4-gb10-level1.json").read_text())
    assert p.returncode == 0 and json.loads(p.stdout)["figures"]["failed"] == [{"test": "software", "gpu": 0}]
    p = bringup("parse", "ibstat", str(FIX / "ibstat" / "rdma-core847-mlx4-two-ports-cut.txt"), "--json")
    ports = json.loads(p.stdout)["figures"]["ports"]
    assert [(x["port"], x["state"], x["rate_gbps"]) for x in ports] == [(1, "Down", 10.0), (2, "Active", 56.0)]


def test_human_output_without_json():
    p = bringup("parse", "nccl", str(FIX / "nccl-tests" / "issue37-pre-hash-allgather-oob-failed.txt"))
    assert p.returncode == 0 and "not ok" in p.stdout and "Out of bounds values: 2 FAILED" in p.stdout


@pytest.mark.parametrize("tool,path,check", [
    ("nccl", "nccl-tests/issue219-failure-before-rows-mpirun.txt", "nccl_failed"),
    ("nccl", "nccl-tests/nccl1039-aborted-rows-no-summary.txt", "nccl_incomplete"),
    ("ibstat", "ibstat/azhpc-images213-ibpanic-only.txt", "ib_no_device"),
])
def test_a_failed_or_cut_run_is_understood_exit_0_not_ok(tool, path, check):
    p = bringup("parse", tool, str(FIX / path), "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ok"] is False and check in [f["check"] for f in doc["findings"]]


@pytest.mark.parametrize("args,needle", [
    (("nccl", str(FIX / "nccl-tests" / "issue131-info-interleaved.txt")), "no bandwidth table rows"),
    (("ibstat", "/nonexistent/ibstat.txt"), "cannot read /nonexistent/ibstat.txt"),
    (("dcgm", str(FIX / "dcgm" / "dcgm4-gb10-level1.json"), "--sku", "hgx-b999"), "unknown SKU 'hgx-b999'"),
])
def test_no_result_is_exit_2_with_one_line(args, needle):
    p = bringup("parse", *args)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]
