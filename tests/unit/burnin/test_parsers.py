"""The agent's parsers against recorded public tool outputs (tests/fixtures/*/README.md)."""

from pathlib import Path

import pytest

from burnin.parsers import UnparseableOutput
from burnin.parsers.dcgm import failing_gpus, overall, parse_dcgm_diag
from burnin.parsers.gpuburn import parse_gpu_burn
from burnin.parsers.nccl import busbw_at_largest, parse_nccl_perf, wrong_total
from burnin.parsers.system import parse_dpkg_query, parse_ibstat, parse_kernel_xids, parse_stress_ng

FIX = Path(__file__).resolve().parents[2] / "fixtures"


def fixture(*parts: str) -> str:
    return (FIX.joinpath(*parts)).read_text()


# --- nccl-tests -------------------------------------------------------------------------
def test_nccl_single_large_row_and_trailer():
    p = parse_nccl_perf(fixture("nccl-tests", "issue319-8g-row.txt"))
    assert [r["size"] for r in p["rows"]] == [8589934592]
    assert p["rows"][0]["busbw_oop"] == 44.14 and p["rows"][0]["busbw_ip"] == 44.33
    assert p["oob_values"] == 0 and p["oob_ok"] is True
    assert p["avg_busbw"] == 20.017
    # the better placement of the largest size, not the all-size average
    assert busbw_at_largest(p, 2) == 44.33
    assert wrong_total(p) == 0


def test_nccl_header_with_root_and_wrong_columns():
    p = parse_nccl_perf(fixture("nccl-tests", "issue150-header-rows.txt"))
    assert [r["size"] for r in p["rows"]] == [8, 16, 32, 64]
    assert p["layout"] == "wrong"
    assert p["oob_values"] is None  # the report stops before the trailer


def test_nccl_rows_without_header_infer_layout_and_pick_largest_sizes():
    p = parse_nccl_perf(fixture("nccl-tests", "mooncake3484-rows.txt"))
    assert len(p["rows"]) == 11
    # largest two sizes: 33554432 -> max(300.51, 300.52); 16777216 -> max(242.00, 243.71); min of those
    assert busbw_at_largest(p, 2) == 243.71
    assert busbw_at_largest(p, 1) == 300.52


def test_nccl_mpi_rank_prefixes_in_the_middle_of_lines():
    p = parse_nccl_perf(fixture("nccl-tests", "nccl1453-mpi-prefixed.txt"))
    sizes = [r["size"] for r in p["rows"]]
    assert sizes[0] == 1048576 and sizes[-1] == 536870912 and len(sizes) == 10
    row = p["rows"][1]
    assert (row["busbw_oop"], row["busbw_ip"], row["wrong_oop"], row["wrong_ip"]) == (1.73, 9.65, 0, 0)
    # two largest sizes: 536870912 -> max(5.31, 5.33), 268435456 -> max(4.09, 4.23); the worst of them
    assert busbw_at_largest(p, 2) == 4.23


def test_nccl_old_layout_has_error_column_not_wrong_counts():
    p = parse_nccl_perf(fixture("nccl-tests", "nccl340-old-layout.txt"))
    assert p["layout"] == "error"
    assert wrong_total(p) is None  # a float error column is not a #wrong count
    assert busbw_at_largest(p, 2) == min(21.50, 21.86)
    assert p["oob_values"] == 0


def test_nccl_info_lines_without_table_is_unparseable():
    text = fixture("nccl-tests", "issue131-info-interleaved.txt")
    with pytest.raises(UnparseableOutput, match="no bandwidth table rows"):
        parse_nccl_perf(text)


def test_nccl_interleaved_info_between_rows_and_wrong_counts():
    # constructed from the two recorded shapes above: an INFO line between rows and a
    # non-zero #wrong in the in-place column
    rows = fixture("nccl-tests", "mooncake3484-rows.txt").splitlines()
    info = "Meowth:8756:8771 [0] NCCL INFO Using network Socket"
    bad = rows[-1][:-1] + "7"
    p = parse_nccl_perf("\n".join(rows[:3] + [info] + rows[3:-1] + [bad]))
    assert len(p["rows"]) == 11
    assert wrong_total(p) == 7


def test_nccl_garbage_rejected():
    with pytest.raises(UnparseableOutput):
        parse_nccl_perf("Segmentation fault (core dumped)\n#### $$$ 12 13\n")


# --- DCGM ---------------------------------------------------------------------------------
def test_dcgm4_real_capture_fail_is_a_failure():
    p = parse_dcgm_diag(fixture("dcgm", "dcgm4-gb10-level1.json"))
    assert p["format"] == "4.x" and p["version"] == "4.2.3"
    (t,) = p["tests"]
    assert t["name"] == "software" and t["category"] == "Deployment" and t["status"] == "fail"
    assert failing_gpus(t) == ["0"]
    assert "Persistence mode" in t["warnings"][0]
    assert overall(p) == "fail"


def test_dcgm3_skip_is_never_pass():
    p = parse_dcgm_diag("Successfully ran diagnostic for group.\n" + fixture("dcgm", "dcgm3-t400-level3-excerpt.json"))
    assert p["format"] == "3.x"
    assert [t["name"] for t in p["tests"]] == ["PCIe", "GPU Memory", "Diagnostic", "EUD Test", "Targeted Stress"]
    assert {t["status"] for t in p["tests"]} == {"skip"}
    assert overall(p) == "skip"


@pytest.mark.parametrize("text", ["", "Error: unable to connect to host engine", "{\"foo\": 1}", "{not json"])
def test_dcgm_unknown_documents_rejected(text):
    with pytest.raises(UnparseableOutput):
        parse_dcgm_diag(text)


def test_dcgm_not_run_and_unknown_status_words_are_not_pass():
    doc = ('{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": ['
           '{"name": "memory", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Pass"},'
           '{"entity_group": "GPU", "entity_id": 1, "status": "Not Run"}]},'
           '{"name": "pcie", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Inconclusive"}]}]}]}}')
    p = parse_dcgm_diag(doc)  # constructed: statuses from the DCGM docs' vocabulary
    assert [t["status"] for t in p["tests"]] == ["not_run", "unknown"]


# --- gpu-burn -------------------------------------------------------------------------------
def test_gpuburn_faulty_while_exit_zero():
    p = parse_gpu_burn(fixture("gpu-burn", "issue12-faulty-16gpu.txt"))
    assert p["tested"] == 16
    assert set(p["gpus"].values()) == {"FAULTY"}
    assert p["errors"][1] == -524288000 and p["errors"][0] == 0
    assert p["temps_c"][:3] == [51, 45, 48]


def test_gpuburn_ok():
    p = parse_gpu_burn(fixture("gpu-burn", "issue124-ok-1gpu.txt"))
    assert p == {"tested": 1, "gpus": {0: "OK"}, "errors": [], "died": [], "temps_c": [], "aborted": False}


def test_gpuburn_truncated_summary_is_unparseable():
    with pytest.raises(UnparseableOutput, match="8 GPUs tested but lists 4"):
        parse_gpu_burn(fixture("gpu-burn", "issue123-truncated-8gpu.txt"))


def test_gpuburn_died_and_aborted():
    p = parse_gpu_burn(fixture("gpu-burn", "issue69-died.txt"))
    assert p["aborted"] is True and p["died"] == list(range(8))


def test_gpuburn_without_summary_is_unparseable():
    with pytest.raises(UnparseableOutput):
        parse_gpu_burn("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n10.0%  proc'd: 1 (1 Gflop/s)   errors: 0   temps: 40 C\n")


# --- host tools (constructed inputs in the documented formats) ---------------------------------
def test_kernel_xid_lines():
    # the line shape from the NVIDIA XID docs, quoted in /work/shared/samples/README.md
    log = ("[ 12.0] something else\n"
           "[4242.4] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
           "[4243.1] NVRM: Xid (PCI:0000:5d:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable DBE\n")
    assert [(x["pci"], x["xid"]) for x in parse_kernel_xids(log)] == [("0000:3b:00", 79), ("0000:5d:00", 48)]


def test_ibstat_blocks():
    text = ("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
            "\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n"
            "CA 'mlx5_1'\n\tPort 1:\n\t\tState: Down\n\t\tRate: 10\n")
    cas = parse_ibstat(text)
    assert cas["mlx5_0"]["ports"][1]["state"] == "Active" and cas["mlx5_0"]["ports"][1]["rate"] == "400"
    assert cas["mlx5_1"]["ports"][1]["state"] == "Down"
    with pytest.raises(UnparseableOutput):
        parse_ibstat("ibwarn: [1234] umad_init: can't read ABI version\n")


def test_stress_ng_metrics_recorded_here():
    # recorded from stress-ng 0.15.06 (Debian 12) on this build host
    text = ("stress-ng: info:  [11149] dispatching hogs: 1 cpu, 1 vm\n"
            "stress-ng: metrc: [11149] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s\n"
            "stress-ng: metrc: [11149] cpu                1133      1.00      0.52      0.00      1127.78        2168.92\n"
            "stress-ng: metrc: [11149] vm                    0      5.51      0.03      3.29         0.00           0.00\n"
            "stress-ng: info:  [11149] successful run completed in 5.51s\n")
    p = parse_stress_ng(text)
    assert p["successful"] and not p["unsuccessful"] and p["bogo_ops_per_s"]["cpu"] == 1127.78


def test_dpkg_query_lines():
    assert parse_dpkg_query("libnccl2\t2.26.2-1+cuda12.8\nlibnccl-dev:amd64\t2.26.2-1+cuda12.8\n") == {
        "libnccl2": "2.26.2-1+cuda12.8", "libnccl-dev": "2.26.2-1+cuda12.8"}
