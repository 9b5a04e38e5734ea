"""Real tool outputs that were read wrong (issue #26): nccl-tests runs that failed or were cut
before their summary, a sweep whose rows were elided, DCGM tests reported ``Skip``, ibstat
that found no device. Each input is a recorded public output (tests/fixtures/*/README.md);
the few lines built here say so and follow the recorded shapes."""

from pathlib import Path

import pytest

from burnin.checks.base import CheckResult, Context
from burnin.checks.tools import DcgmCheck, NcclCheck
from burnin.parsers import UnparseableOutput, dcgm
from burnin.parsers.ibstat import assess as ib_assess
from burnin.parsers.ibstat import parse_ibstat
from burnin.parsers.nccl import (
    assess,
    busbw_at_largest,
    largest_sizes,
    parse_nccl_perf,
    parse_nccl_run,
    run_outcome,
)
from burnin.proc import ToolRun

FIX = Path(__file__).resolve().parents[2] / "fixtures"
LIMITS = {"float": 1e-5}


def fixture(*parts: str) -> str:
    return FIX.joinpath(*parts).read_text()


def codes(findings, severity=None):
    return [f["code"] for f in findings if severity is None or f["severity"] == severity]


# --- nccl-tests: a run that did not print its summary did not finish ---------------------------
@pytest.mark.parametrize("name,last", [("nccl1039-aborted-rows-no-summary.txt", 64),
                                       ("issue150-header-rows.txt", 64)])
def test_a_run_cut_before_its_summary_is_an_incomplete_run(name, last):
    p = parse_nccl_run(fixture("nccl-tests", name))
    assert p["complete"] is False and p["rows"][-1]["size"] == last
    (f,) = [f for f in assess(p, LIMITS) if f["code"] == "nccl_incomplete"]
    assert f["severity"] == "error" and "cut before its summary" in f["message"]
    assert f"after the {last}-byte row" in f["message"]


def test_a_whole_run_is_complete():
    p = parse_nccl_run(fixture("nccl-tests", "awsome-batch-p5-tag-output.txt"))
    assert p["complete"] is True and p["failures"] == [] and assess(p, LIMITS) == []


# --- nccl-tests: failure lines are read, from any rank, after any prefix ------------------------
def test_rows_then_test_nccl_failure_from_several_hosts_is_a_failed_run():
    # nccl-tests #322: five healthy rows, then every rank reports "Test NCCL failure"
    p = parse_nccl_run(fixture("nccl-tests", "issue322-rows-then-nccl-failure-multihost.txt"))
    assert len(p["rows"]) == 5 and len(p["failures"]) == 8
    assert p["failures"][0].startswith("HCA-128: Test NCCL failure common.cu:1204")
    (f,) = [f for f in assess(p, LIMITS) if f["code"] == "nccl_failed"]
    assert f["severity"] == "fail" and "after the 17179869184-byte row" in f["message"] and "(+7 more)" in f["message"]


def test_single_node_failure_after_a_row():
    # nccl #1184: NCCL_ALGO=Tree on a DGX H100 dies after the 512 KiB row
    p = parse_nccl_run(fixture("nccl-tests", "nccl1184-tree-failure-after-512k-row.txt"))
    assert codes(assess(p, LIMITS), "fail") == ["nccl_failed"]
    assert "invalid usage" in assess(p, LIMITS)[0]["message"]


def test_failure_before_any_row_is_a_failed_run_not_garbage():
    # nccl-tests #219: the test fails at init under mpirun, which reports the rank's exit
    text = fixture("nccl-tests", "issue219-failure-before-rows-mpirun.txt")
    p = parse_nccl_run(text)
    assert p["rows"] == [] and busbw_at_largest(p) is None
    assert codes(assess(p, LIMITS), "fail") == ["nccl_failed", "nccl_launcher_failed"]
    assert "before any table row" in assess(p, LIMITS)[0]["message"]
    # the table-only reader (fabric runner, smoke test) still has no table, and says why
    with pytest.raises(UnparseableOutput, match="the run failed before any row .*Test NCCL failure"):
        parse_nccl_perf(text)


@pytest.mark.parametrize("name,needle", [("issue218-mpirun-exited-on-signal.txt", "exited on signal 11"),
                                         ("issue294-mpirun-nonzero-status.txt", "exited with non-zero status")])
def test_the_launchers_report_of_a_bad_exit_is_a_failed_run(name, needle):
    p = parse_nccl_run(fixture("nccl-tests", name))
    (f,) = assess(p, LIMITS)
    assert f["code"] == "nccl_launcher_failed" and f["severity"] == "fail" and needle in f["message"]


@pytest.mark.parametrize("prefix", ["[1,0]<stdout>:", "[1,3]<stderr>:", "0: ", "(worker1, rank=1, pid=2769) "])
def test_failure_line_after_any_launcher_prefix(prefix):
    # constructed: the recorded nccl #1184 failure line behind OpenMPI --tag-output, srun
    # --label and SkyPilot prefixes, after the recorded rows of nccl #1039
    rows = fixture("nccl-tests", "nccl1039-aborted-rows-no-summary.txt")
    line = fixture("nccl-tests", "nccl1184-tree-failure-after-512k-row.txt").splitlines()[1]
    p = parse_nccl_run(rows + prefix + line + "\n")
    assert p["failures"] and "nccl_failed" in codes(assess(p, LIMITS), "fail")


def test_srun_task_exit_is_read_from_stderr():
    # recorded: Slurm's report of a GPU job step whose task 3 exited 255 and whose other tasks
    # srun then terminated (flowpm #80), as the stderr of a run with the recorded rows of nccl #1039
    rows = fixture("nccl-tests", "nccl1039-aborted-rows-no-summary.txt")
    report = fixture("nccl-tests", "flowpm80-srun-task-exit-and-terminated.txt")
    p = parse_nccl_run(rows, stderr=report)
    (f,) = [f for f in assess(p, LIMITS) if f["severity"] == "fail"]
    assert f["code"] == "nccl_launcher_failed" and "task 3: Exited with exit code 255" in f["message"]
    # the report alone, with no table, is a failed run, not output nobody understood
    p = parse_nccl_run(report)
    assert codes(assess(p, LIMITS), "fail") == ["nccl_launcher_failed"]
    # constructed from srun's own format for a task killed by a signal ("tasks 0-7: Killed")
    p = parse_nccl_run(rows, stderr="srun: error: worker-1: tasks 0-7: Killed\n")
    assert codes(assess(p, LIMITS), "fail") == ["nccl_launcher_failed"]


# --- nccl-tests: the two largest sizes are neighbours in the sweep --------------------------------
def test_elided_sweep_never_pairs_the_largest_size_with_a_far_smaller_row():
    # constructed from the recorded p5 run: a reporter keeps the small sizes and the last row
    lines = fixture("nccl-tests", "awsome-batch-p5-tag-output.txt").splitlines()
    elided = {str(2 ** n) for n in range(21, 34)}  # 2 MiB .. 8 GiB

    def size(line: str) -> str:
        toks = line.split(":", 1)[-1].split()
        return toks[0] if toks else ""
    kept = [ln for ln in lines if size(ln) not in elided]
    p = parse_nccl_run("\n".join(kept))
    assert max(r["size"] for r in p["rows"]) == 2 ** 34 and 2 ** 33 not in {r["size"] for r in p["rows"]}
    assert largest_sizes(p, 2) == [2 ** 34]
    assert busbw_at_largest(p, 2) == 483.35  # 16 GiB alone, not the 1 MiB row's figure
    # the whole sweep still pairs 16 GiB with 8 GiB
    whole = parse_nccl_run("\n".join(lines))
    assert largest_sizes(whole, 2) == [2 ** 34, 2 ** 33] and busbw_at_largest(whole, 2) == 480.43


def test_header_less_rows_infer_the_factor():
    p = parse_nccl_run(fixture("nccl-tests", "issue322-rows-then-nccl-failure-multihost.txt"))
    assert largest_sizes(p, 2) == [2 ** 34, 2 ** 33] and busbw_at_largest(p, 2) == 365.65


# --- the agent's nccl check on those outputs --------------------------------------------------------
def agent_nccl(stdout: str, rc: int = 0, stderr: str = "", min_busbw: float = 1):
    ctx = Context({"limits": {"min_busbw_gbps": min_busbw}}, nvml=None)  # type: ignore[arg-type]
    ctx.run = lambda *a, **k: ToolRun(["all_reduce_perf"], rc=rc, stdout=stdout, stderr=stderr)  # type: ignore[method-assign]
    r = CheckResult(name="nccl")
    NcclCheck().run(ctx, r)
    return r


def test_agent_fails_a_run_that_died_and_errors_a_cut_one():
    died = agent_nccl(fixture("nccl-tests", "issue219-failure-before-rows-mpirun.txt"), rc=1)
    assert died.status == "fail" and "nccl_failed" in codes(died.findings)
    assert died.metrics["busbw_largest_gbps"] is None
    cut = agent_nccl(fixture("nccl-tests", "nccl1039-aborted-rows-no-summary.txt"))
    assert cut.status == "error" and codes(cut.findings, "error") == ["nccl_incomplete"]


@pytest.mark.parametrize("name,rc,code,last", [
    # nccl-tests #322: rows up to 16 GiB at ~366 GB/s, below the H100 gate, then every rank fails
    ("issue322-rows-then-nccl-failure-multihost.txt", 1, "nccl_failed", 2 ** 34),
    # nccl #1184: dies after the 512 KiB row (a few GB/s at that size)
    ("nccl1184-tree-failure-after-512k-row.txt", 1, "nccl_failed", 524288),
    # nccl #1039: cut after the 64-byte row, no summary (latency-bound figures near zero)
    ("nccl1039-aborted-rows-no-summary.txt", 0, "nccl_incomplete", 64),
])
def test_a_run_that_did_not_finish_has_no_bandwidth_verdict(name, rc, code, last):
    r = agent_nccl(fixture("nccl-tests", name), rc=rc, min_busbw=460)
    assert code in codes(r.findings) and "busbw_low" not in codes(r.findings), r.findings
    # its rows are kept, marked, but no busbw figure stands for the node
    assert r.metrics["busbw_largest_gbps"] is None and r.data["busbw_sizes"] == []
    assert r.data["rows"][-1]["size"] == last and r.data["rows_from_unfinished_run"] is True


def test_a_whole_run_with_a_bad_exit_is_judged_by_its_exit_not_its_bandwidth():
    # the recorded p5 run (~480 GB/s at 16 GiB) under a gate it misses, exiting 1
    text = fixture("nccl-tests", "awsome-batch-p5-tag-output.txt")
    bad = agent_nccl(text, rc=1, min_busbw=500)
    assert codes(bad.findings) == ["nccl_failed"] and bad.metrics["busbw_largest_gbps"] is None
    # the same run exiting 0 is a measurement: below the gate is busbw_low
    ok = agent_nccl(text, rc=0, min_busbw=500)
    assert codes(ok.findings) == ["busbw_low"] and ok.metrics["busbw_largest_gbps"] == 480.43
    assert "rows_from_unfinished_run" not in ok.data and ok.data["busbw_sizes"] == [2 ** 34, 2 ** 33]


# --- DCGM: Skip is reported, not failed; a required test must run ---------------------------------
def test_dcgm_skipped_tests_are_reported_not_failed():
    # NVIDIA/DCGM testing/TestDiagManagerStrings.h PER_GPU_JSON (saved dcgmi output): the
    # hardware diagnostic plugin is missing ("Unable to find hardware diagnostic, skipping")
    p = dcgm.parse_dcgm_diag(fixture("dcgm", "dcgm1.7-per-gpu-skips-saved.json"))
    found = dcgm.assess(p)
    assert {f["test"] for f in found if f["code"] == "dcgm_skipped"} == {
        "memory", "diagnostic", "memory_bandwidth", "targeted_stress", "targeted_power"}
    assert {f["severity"] for f in found if f["code"] == "dcgm_skipped"} == {"info"}
    assert [(f["code"], f["test"]) for f in found if f["severity"] != "info"] == [("dcgm_failed", "sm_stress")]
    assert "Unable to find hardware diagnostic" in next(f for f in found if f["test"] == "diagnostic")["message"]


def test_dcgm_a_required_test_that_was_skipped_or_is_absent_is_the_finding():
    p = dcgm.parse_dcgm_diag(fixture("dcgm", "dcgm1.7-per-gpu-skips-saved.json"))
    found = dcgm.assess(p, ["diagnostic", "eud"])
    errors = [(f["code"], f["test"]) for f in found if f["severity"] == "error"]
    assert errors == [("dcgm_not_run", "diagnostic"), ("dcgm_required_missing", "eud")]
    # DCGM 3.x spells them "EUD Test", "GPU Memory": the same tests
    t400 = dcgm.parse_dcgm_diag(fixture("dcgm", "dcgm3-t400-level3-excerpt.json"))
    assert "dcgm_required_missing" not in codes(dcgm.assess(t400, ["eud", "memory"]))
    ok = dcgm.parse_dcgm_diag(fixture("dcgm", "dcgm3.1-nulls-in-tests.json"))
    assert dcgm.assess(ok, ["software"]) == []
    assert codes(dcgm.assess(ok, ["software", "eud"]), "error") == ["dcgm_required_missing"]


def test_agent_dcgm_check_passes_with_a_tolerated_skip_and_counts_it():
    doc = fixture("dcgm", "dcgm1.7-per-gpu-skips-saved.json").replace('"status": "FAIL"', '"status": "PASS"')
    ctx = Context({"limits": {"dcgm_required_tests": ["pcie"]}}, nvml=None)  # type: ignore[arg-type]
    ctx.run = lambda *a, **k: ToolRun(["dcgmi"], rc=0, stdout=doc)  # type: ignore[method-assign]
    r = CheckResult(name="dcgm")
    DcgmCheck().run(ctx, r)
    # constructed: the saved run with its sm_stress failures turned into passes
    assert r.status == "pass", r.findings
    assert r.metrics["tests_not_run"] == 0 and r.metrics["tests_skipped"] == 5


# --- ibstat: a panic before any CA is a node without IB devices -------------------------------------
@pytest.mark.parametrize("name,dev", [("azhpc-images213-ibpanic-only.txt", "mlx5_an0"),
                                      ("rdma-core239-ibpanic-invalid-argument.txt", "mlx5_1")])
def test_ibpanic_without_a_ca_is_an_unhealthy_result_with_no_ports(name, dev):
    p = parse_ibstat(fixture("ibstat", name))
    assert p["ports"] == [] and p["no_device"] is True and dev in p["panics"][0]
    assert codes(ib_assess(p), "fail") == ["ib_no_device"]
    assert codes(ib_assess(p, expect_ports=8, expect_rate_gbps=400), "fail") == ["ib_no_device", "ib_port_missing"]


@pytest.mark.parametrize("name, want, says", [
    ("issue319-8g-row.txt", "pass", None),
    ("issue322-rows-then-nccl-failure-multihost.txt", "fail", "HCA-128: Test NCCL failure common.cu:1204"),
    ("issue219-failure-before-rows-mpirun.txt", "fail", "before any table row: fengyun: Test NCCL failure"),
    ("nccl1039-aborted-rows-no-summary.txt", "unknown", "cut before its summary, after the 64-byte row"),
    ("superbench-allreduce-na-error.txt", "unknown", "not validated"),
])
def test_run_outcome_is_the_one_judgement_the_pair_test_and_the_smoke_pod_share(name, want, says):
    outcome, messages = run_outcome(assess(parse_nccl_run(fixture("nccl-tests", name)), LIMITS))
    assert outcome == want, messages
    assert (messages == []) if says is None else any(says in m for m in messages), messages
