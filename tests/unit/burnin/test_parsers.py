"""The agent's nccl-tests and host-tool parsers against recorded public outputs
(tests/fixtures/*/README.md); gpu-burn and DCGM are in test_parsers_gpu.py, ibstat in
test_parsers_ibstat.py."""

from pathlib import Path

import pytest

from burnin.parsers import UnparseableOutput
from burnin.parsers.nccl import (
    assess,
    busbw_at_largest,
    error_figures,
    parse_nccl_perf,
    strip_launcher,
    wrong_total,
)
from burnin.parsers.system import parse_dpkg_query, parse_kernel_xids, parse_stress_ng

FIX = Path(__file__).resolve().parents[2] / "fixtures"
LIMITS = {"float": 1e-5, "half": 1e-2}


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
    assert p["rows"][0]["error_oop"] == 0.0 and p["rows"][0]["type"] == "float"
    assert error_figures(p, LIMITS) == {"max": 0.0, "over": 0, "unknown_types": []}
    assert assess(p, LIMITS) == []


def test_nccl_pre_hash_layout_keeps_the_failed_trailer_and_judges_the_error_column():
    # nccl-tests issue #37 (2020): no '#' on the header nor on "Out of bounds values : 2 FAILED"
    p = parse_nccl_perf(fixture("nccl-tests", "issue37-pre-hash-allgather-oob-failed.txt"))
    assert [r["size"] for r in p["rows"]] == [4294967296]
    assert p["oob_values"] == 2 and p["oob_ok"] is False
    assert p["avg_busbw"] == 128.942
    assert p["rows"][0]["error_oop"] == 1.0 and p["rows"][0]["error_ip"] == 1.0
    codes = {f["code"]: f for f in assess(p, LIMITS)}
    assert set(codes) == {"nccl_oob", "nccl_error_high"}
    assert all(f["severity"] == "fail" for f in codes.values())
    assert error_figures(p, LIMITS)["over"] == 2


def test_nccl_error_column_judged_against_the_limit_of_its_type():
    p = parse_nccl_perf(fixture("nccl-tests", "aws-efa-eks-old-layout-tag-output.txt"))
    assert error_figures(p, LIMITS)["max"] == 5e-07  # below float's 1e-5: healthy
    assert error_figures(p, {"float": 1e-7})["over"] > 0  # the same rows against a tighter limit fail
    unknown = error_figures(p, {"half": 1e-2})
    assert unknown["unknown_types"] == ["float"] and unknown["over"] == 0
    # a type with no limit is never judged as within bounds
    assert [f["code"] for f in assess(p, {"half": 1e-2})] == ["nccl_error_unjudged"]


def test_nccl_openmpi_tag_output_with_other_ranks_interleaved():
    p = parse_nccl_perf(fixture("nccl-tests", "aws-efa-eks-old-layout-tag-output.txt"))
    assert len(p["rows"]) == 28 and p["rows"][0]["size"] == 8 and p["rows"][-1]["size"] == 1073741824
    assert p["layout"] == "error" and p["oob_values"] == 0
    assert busbw_at_largest(p, 1) == 32.84


def test_nccl_openmpi_tag_output_drops_stderr_and_reads_the_version():
    p = parse_nccl_perf(fixture("nccl-tests", "ebpf-tag-output-2.18-rtx5090.txt"))
    assert len(p["rows"]) == 8 and p["tests_version"] == "2.18.0"
    assert p["layout"] == "wrong" and wrong_total(p) == 0 and p["validated"] is True
    assert busbw_at_largest(p, 1) == 2.31
    assert strip_launcher("[1,0]<stderr>:Authorization required") is None


def test_nccl_p5_tag_output_rows():
    p = parse_nccl_perf(fixture("nccl-tests", "awsome-batch-p5-tag-output.txt"))
    assert len(p["rows"]) == 32 and p["avg_busbw"] == 156.742
    assert busbw_at_largest(p, 2) == 480.43  # 8G: max(480.43, 480.36); 16G: 483.35; worst of the two
    assert assess(p, LIMITS) == []


def test_nccl_skypilot_and_openmpi_prefixes_stacked():
    p = parse_nccl_perf(fixture("nccl-tests", "skypilot-gke-h200-allgather-prefixed.txt"))
    assert len(p["rows"]) == 24 and p["rows"][0]["size"] == 1024
    assert p["rows"][-1]["busbw_ip"] == 332.58 and p["oob_values"] == 0
    assert busbw_at_largest(p, 1) == 332.58
    assert strip_launcher("(worker1, rank=1, pid=2769, ip=10.100.10.12) Worker nodes") == "Worker nodes"


def test_nccl_openmpi_tag_in_the_middle_of_a_cut_line_is_removed():
    whole, cut = fixture("nccl-multinode", "psij510-tag-mid-line.txt").splitlines()
    assert strip_launcher(whole) == strip_launcher(cut) == "ABCDEFGH"
    # the recorded p5 run, each table row cut in two chunks as mpirun tags them (the
    # mangling psij-python #510 shows): the same table comes back
    text = fixture("nccl-tests", "awsome-batch-p5-tag-output.txt")
    lines = []
    for line in text.splitlines():
        tag = line[:line.index(":") + 1] if line.startswith("[1,0]<stdout>:") else ""
        lines.append(line[:30] + tag + line[30:] if tag and len(line) > 40 else line)
    assert parse_nccl_perf("\n".join(lines))["rows"] == parse_nccl_perf(text)["rows"]


def test_nccl_run_without_validation_is_never_a_pass():
    # superbenchmark's recorded run with -c 0: error column N/A and "validation: 0"
    p = parse_nccl_perf(fixture("nccl-tests", "superbench-allreduce-na-error.txt"))
    assert p["validated"] is False and p["oob_values"] == 0
    assert [f["code"] for f in assess(p, LIMITS)] == ["nccl_not_validated"]
    assert assess(p, LIMITS)[0]["severity"] == "error"


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


# --- host tools (constructed inputs in the documented formats) ---------------------------------
def test_kernel_xid_lines():
    # the line shape from the NVIDIA XID docs, quoted in /work/shared/samples/README.md
    log = ("[ 12.0] something else\n"
           "[4242.4] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
           "[4243.1] NVRM: Xid (PCI:0000:5d:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable DBE\n")
    assert [(x["pci"], x["xid"]) for x in parse_kernel_xids(log)] == [("0000:3b:00", 79), ("0000:5d:00", 48)]


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
