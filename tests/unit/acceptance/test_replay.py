"""bringup.acceptance.replay on the recorded public outputs of tests/fixtures (see each README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.acceptance.replay import TOOLS, replay
from bringup.errors import ParseError
from bringup.sku import load_skus

FIX = Path(__file__).resolve().parents[2] / "fixtures"
H100 = "hgx-h100-80gb"


def read(*parts: str) -> str:
    return FIX.joinpath(*parts).read_text()


def checks(r) -> list[str]:
    return sorted({f.check for f in r.findings if f.severity != "info"})


# --- nccl ----------------------------------------------------------------------------------------
def test_nccl_h100_p5_with_tag_output_passes_the_sku_gate():
    r = replay("nccl", read("nccl-tests", "awsome-batch-p5-tag-output.txt"), load_skus()[H100])
    assert r.ok and r.findings == []
    assert r.figures["busbw_gbps"] == 480.43 and r.figures["rows"] == 32 and r.figures["wrong"] == 0


def test_nccl_without_sku_reports_bandwidth_but_does_not_judge_it():
    r = replay("nccl", read("nccl-tests", "skypilot-gke-h200-allgather-prefixed.txt"))
    assert r.ok and [f.check for f in r.findings] == ["busbw_unjudged"]
    assert r.figures["rows"] == 24 and r.figures["busbw_gbps"] == 331.87  # 4G: max(324.30, 331.87); 8G: 332.58


def test_nccl_old_build_corruption_is_caught():
    r = replay("nccl", read("nccl-tests", "issue37-pre-hash-allgather-oob-failed.txt"))
    assert not r.ok and checks(r) == ["nccl_error_high", "nccl_oob"]
    assert r.figures["wrong"] is None and r.figures["oob_values"] == 2


def test_nccl_below_the_gate_fails_with_sku():
    r = replay("nccl", read("nccl-tests", "skypilot-gke-h200-allgather-prefixed.txt"), load_skus()["hgx-h200-141gb"])
    assert not r.ok and checks(r) == ["busbw_low"]


def test_nccl_unvalidated_run_is_not_ok():
    r = replay("nccl", read("nccl-tests", "superbench-allreduce-na-error.txt"))
    assert not r.ok and checks(r) == ["nccl_not_validated"]


# --- gpu-burn --------------------------------------------------------------------------------------
def test_gpu_burn_gpus_that_never_started_are_faulty():
    r = replay("gpu-burn", read("gpu-burn", "issue7-init-failed-6gpu.txt"))
    assert not r.ok and r.figures["gpus"] == 6 and r.figures["faulty"] == [0, 1, 2, 3, 4, 5]


def test_gpu_burn_healthy_8gpu():
    r = replay("gpu-burn", read("gpu-burn", "superbench-a100-8gpu-ok-trimmed.txt"), load_skus()[H100])
    assert r.ok and r.figures == {"gpus": 8, "faulty": [], "procd": [6783, 6783, 6783, 4522, 4522, 6783, 4522, 4522],
                                  "gflops": [16942.0, 17093.0, 16957.0, 16926.0, 16890.0, 16950.0, 17010.0, 16926.0],
                                  "finished": True}


def test_gpu_burn_faulty_gpus_from_the_summary():
    r = replay("gpu-burn", read("gpu-burn", "issue12-faulty-16gpu.txt"))
    assert not r.ok and r.figures["faulty"] == list(range(16))


# --- dcgm ----------------------------------------------------------------------------------------
def test_dcgm_failed_tests_name_gpus():
    r = replay("dcgm", read("dcgm", "dcgm4-gb10-level1.json"))
    assert not r.ok and r.figures["failed"] == [{"test": "software", "gpu": 0}]


def test_dcgm31_with_nulls_passes():
    r = replay("dcgm", read("dcgm", "dcgm3.1-nulls-in-tests.json"))
    assert r.ok and r.figures["failed"] == [] and r.figures["tests"] == 10


def test_dcgm_skipped_tests_are_not_ok():
    r = replay("dcgm", read("dcgm", "dcgm3-t400-level3-excerpt.json"))
    assert not r.ok and {f.severity for f in r.findings} == {"error"}


# --- ibstat --------------------------------------------------------------------------------------
def test_ibstat_ports_figures_and_sku():
    text = read("ibstat", "l2fwd-nv6-cx6dx-ethernet.txt")
    r = replay("ibstat", text)
    assert r.ok and r.figures["ports"][0] == {"ca": "mlx5_0", "port": 1, "state": "Active", "rate_gbps": 100.0,
                                               "link_layer": "Ethernet"}
    with_sku = replay("ibstat", text, load_skus()[H100])
    assert not with_sku.ok and checks(with_sku) == ["ib_port_missing"]


def test_ibstat_down_port_is_not_ok():
    r = replay("ibstat", read("ibstat", "rdma-core847-mlx4-two-ports-cut.txt"))
    assert not r.ok and checks(r) == ["ib_port_down"]


# --- no result ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tool,text,missing", [
    ("nccl", read("nccl-tests", "issue131-info-interleaved.txt"), "no bandwidth table rows"),
    ("dcgm", "Error: unable to connect to host engine\n", "no JSON object"),
    ("gpu-burn", "Segmentation fault (core dumped)\n", "no progress record"),
    ("ibstat", "ibwarn: [1234] umad_init: can't read ABI version\n", "no \"CA"),
])
def test_output_without_a_result_is_a_parse_error_naming_what_is_missing(tool, text, missing):
    with pytest.raises(ParseError, match=missing) as exc:
        replay(tool, text, source="out.txt")
    assert str(exc.value).startswith(f"out.txt: no {tool} result")


def test_tools_list():
    assert TOOLS == ("nccl", "dcgm", "gpu-burn", "ibstat")
    with pytest.raises(ValueError):
        replay("fio", "{}")
