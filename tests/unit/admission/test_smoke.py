"""The smoke pod (bringup.admission.smoke): its manifest and what its log means, on recorded outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.admission import readiness as rd
from bringup.admission import smoke

FIX = Path(__file__).resolve().parents[2] / "fixtures"
POLICY = rd.load_policy()
H100x8 = rd.Expected(gpu_count=8, gpu_model="NVIDIA H100 80GB HBM3", gpu_memory_mib=81559, driver="570.133.20")
H100x4 = rd.Expected(gpu_count=4, gpu_model="NVIDIA H100 80GB HBM3", gpu_memory_mib=81559, driver="550.54.15")


def fixture(path: str) -> str:
    return (FIX / path).read_text()


def test_manifest_pins_the_node_tolerates_the_taint_and_asks_for_every_gpu():
    pod = smoke.pod_manifest(POLICY, "GPU-Node_07", 8)
    spec = pod["spec"]
    assert pod["metadata"]["name"] == "bringup-smoke-gpu-node-07"
    assert spec["nodeName"] == "GPU-Node_07" and spec["restartPolicy"] == "Never"
    assert spec["tolerations"] == [{"key": "bringup.io/validation-pending", "operator": "Equal",
                                    "value": "true", "effect": "NoSchedule"}]
    c = spec["containers"][0]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "8"} == c["resources"]["requests"]
    assert c["command"][-1].endswith("-g 8")


@pytest.mark.parametrize("name, rows, driver", [("query-h100-header.csv", 1, None),
                                                ("query-h100x4-driver-noheader.csv", 4, "550.54.15")])
def test_device_query_rows(name, rows, driver):
    got = smoke.parse_device_query(fixture(f"nvidia-smi/{name}"))
    assert len(got) == rows
    assert {r.name for r in got} == {"NVIDIA H100 80GB HBM3"} and got[0].memory_mib == 81559
    assert got[-1].driver == driver


def test_the_clocks_layout_is_not_mistaken_for_rows():
    # a query with other columns is not the smoke pod's; its rows must not count as GPUs
    assert smoke.parse_device_query(fixture("nvidia-smi/query-h100-clocks.csv")) == []


def log(query: str, nccl: str) -> str:
    return fixture(f"nvidia-smi/{query}") + fixture(f"nccl-tests/{nccl}")


def outcome(text: str, phase="Succeeded", code=0, **kw) -> smoke.PodOutcome:
    return smoke.PodOutcome(name="bringup-smoke-n1", phase=phase, exit_code=code, log=text, **kw)


def test_a_clean_pod_passes():
    checks = smoke.assess(outcome(log("query-h100x4-driver-noheader.csv", "issue319-8g-row.txt")), H100x4)
    assert [c.outcome for c in checks] == ["pass", "pass", "pass"], checks


def test_fewer_gpus_in_the_pod_than_netbox_expects_fails():
    checks = smoke.assess(outcome(log("query-h100x4-driver-noheader.csv", "issue319-8g-row.txt")), H100x8)
    assert checks[1].outcome == "fail" and "4 GPU(s)" in checks[1].detail


def test_failed_pod_timeout_and_missing_exit_code():
    assert smoke.assess(outcome("", phase="Failed", code=1), H100x8)[0].detail.endswith("(exit code 1)")
    assert smoke.assess(outcome("", phase="Pending", code=None, timed_out=True), H100x8)[0].outcome == "fail"
    assert smoke.assess(outcome("", code=None), H100x8)[0].outcome == "unknown"


def test_nccl_corruption_and_unvalidated_runs_never_pass():
    bad = smoke.assess(outcome(log("query-h100x4-driver-noheader.csv", "issue37-pre-hash-allgather-oob-failed.txt")),
                       H100x4)
    assert bad[-1].outcome == "fail"
    unchecked = smoke.assess(outcome(log("query-h100x4-driver-noheader.csv", "superbench-allreduce-na-error.txt")),
                             H100x4)
    assert unchecked[-1].outcome == "unknown"


def test_a_log_without_a_table_is_unknown():
    checks = smoke.assess(outcome(fixture("nvidia-smi/query-h100x4-driver-noheader.csv")), H100x4)
    assert checks[-1].outcome == "unknown"


# issue #26: the pod's NCCL run is judged as the burn-in agent judges it
def test_a_failure_line_after_rows_fails_the_smoke_nccl_check():
    # nccl/issues/1184: the 512 KiB row, then "h100: Test NCCL failure common.cu:303 'invalid usage ...'"
    checks = smoke.assess(outcome(log("query-h100x4-driver-noheader.csv", "nccl1184-tree-failure-after-512k-row.txt")),
                          H100x4)
    assert checks[-1].outcome == "fail", checks[-1]
    assert "failed after the 524288-byte row: h100: Test NCCL failure common.cu:303" in checks[-1].detail


def test_a_run_that_failed_before_any_row_is_a_failure_not_unreadable():
    # nccl-tests #219: the failure at init, then OpenMPI's report; no row at all
    checks = smoke.assess(outcome(log("query-h100x4-driver-noheader.csv", "issue219-failure-before-rows-mpirun.txt")),
                          H100x4)
    assert checks[-1].outcome == "fail", checks[-1]
    assert "before any table row: fengyun: Test NCCL failure common.cu:959" in checks[-1].detail


def test_a_run_cut_before_its_summary_is_never_ok_and_says_so():
    # nccl/issues/1039: rows up to 64 bytes, then nothing; the pod still exited 0
    checks = smoke.assess(outcome(log("query-h100x4-driver-noheader.csv", "nccl1039-aborted-rows-no-summary.txt")),
                          H100x4)
    assert checks[-1].outcome == "unknown"
    assert "incomplete run: cut before its summary, after the 64-byte row" in checks[-1].detail


def test_a_failed_pod_names_the_nccl_failure_its_log_shows():
    text = log("query-h100x4-driver-noheader.csv", "issue322-rows-then-nccl-failure-multihost.txt")
    checks = smoke.assess(outcome(text, phase="Failed", code=3), H100x4)
    assert [c.outcome for c in checks] == ["fail", "fail"]
    assert "HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda error" in checks[1].detail
