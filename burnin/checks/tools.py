"""GPU stress and fabric checks driven by external tools: DCGM diag, gpu-burn, nccl-tests."""

from typing import Any

from ..parsers import UnparseableOutput
from ..parsers import dcgm as dcgm_parser
from ..parsers import gpuburn as gpuburn_parser
from ..parsers import nccl as nccl_parser
from ..parsers.dcgm import parse_dcgm_diag
from ..parsers.gpuburn import parse_gpu_burn
from ..parsers.nccl import (
    busbw_at_largest,
    error_figures,
    finished,
    largest_sizes,
    parse_nccl_run,
    wrong_total,
)
from ..proc import tail
from .base import Check, CheckResult, Context

#: nccl-tests' own per-type tolerance (DeltaMaxValue in its common.cu), used when the plan
#: brings none; the controller's plan carries the values of bringup/data/thresholds.yaml
NCCL_ERROR_LIMITS = {"float": 1e-5, "half": 1e-2, "bfloat16": 1e-2, "double": 1e-12}


def _garbage(r: CheckResult, tool: str, exc: Exception, stdout: str) -> None:
    r.error("unparseable_output", f"{tool} output is not in the expected format: {exc}", tool=tool)
    r.data["stdout_head"] = stdout[:500]


def _record(r: CheckResult, findings: list[dict[str, Any]]) -> None:
    """Turn a parser's assessment into the check's findings (``error`` ones make it error)."""
    for f in findings:
        where = {k: v for k, v in f.items() if k not in ("code", "message", "severity")}
        if f["severity"] == "error":
            r.error(f["code"], f["message"], **where)
        else:
            r.find(f["code"], f["message"], fail=f["severity"] == "fail", **where)


class DcgmCheck(Check):
    name = "dcgm"
    needs_gpu = True

    def run(self, ctx: Context, r: CheckResult) -> None:
        run = ctx.run("dcgmi", "dcgmi", ["diag", "-r", "1", "-j"], 600)
        if run.missing or run.timed_out or run.error:
            r.tool_problem(run)
            return
        r.evidence.append(run.evidence())
        try:
            parsed = parse_dcgm_diag(run.stdout)
        except UnparseableOutput as exc:
            # dcgmi exits non-zero when a test fails, but still prints the document; no
            # document at all with a bad exit is a crash
            if run.rc != 0:
                r.error("tool_crashed", f"dcgmi exited {run.rc} without a result document: "
                        f"{tail(run.stderr or run.stdout, 300)}", tool="dcgmi")
            else:
                _garbage(r, "dcgmi", exc, run.stdout)
            return
        r.data.update({"dcgm_version": parsed["version"], "format": parsed["format"],
                       "tests": parsed["tests"]})
        if parsed["runtime_error"]:
            _record(r, dcgm_parser.assess(parsed))
            return
        counts = {"pass": 0, "fail": 0, "warn": 0, "skip": 0, "not_run": 0, "unknown": 0}
        for t in parsed["tests"]:
            counts[t["status"]] += 1
        if parsed["nulls_skipped"]:
            r.data["nulls_skipped"] = parsed["nulls_skipped"]
        found = dcgm_parser.assess(parsed, ctx.limits.get("dcgm_required_tests"))
        _record(r, found)
        # a Skip the plan tolerates is reported (tests_skipped); one it needs did not run
        unverified = {f["test"] for f in found if f["severity"] == "error" and f.get("test")}
        r.metrics.update({"tests_passed": counts["pass"], "tests_failed": counts["fail"] + counts["warn"],
                          "tests_not_run": len(unverified),
                          "tests_skipped": sum(1 for t in parsed["tests"]
                                               if t["status"] == "skip" and t["name"] not in unverified)})
        if run.rc != 0 and r.status == "pass":
            r.find("dcgm_failed", f"dcgmi exited {run.rc} although every test passed")


class GpuBurnCheck(Check):
    name = "gpu_burn"
    needs_gpu = True

    def run(self, ctx: Context, r: CheckResult) -> None:
        duration = int(ctx.tool("gpu_burn").get("duration_s", 10))
        run = ctx.run("gpu_burn", "gpu_burn", ["-d"], duration + 60, extra=[str(duration)])
        if r.tool_problem(run):
            return
        try:
            parsed = parse_gpu_burn(run.stdout)
        except UnparseableOutput as exc:
            _garbage(r, "gpu_burn", exc, run.stdout)
            return
        r.data.update(parsed)
        _record(r, gpuburn_parser.assess(parsed, ctx.expect.get("gpu_count")))
        procd: list[int] = parsed["procd"]  # type: ignore[assignment]
        gflops: list[float] = parsed["gflops"]  # type: ignore[assignment]
        faulty = [g for g, st in parsed["gpus"].items() if st != "OK"]  # type: ignore[union-attr]
        r.metrics.update({"faulty_gpus": len(faulty),
                          "errors_total": sum(e for e in parsed["errors"] if e > 0),  # type: ignore[union-attr]
                          "gpus_tested": parsed["tested"],
                          # a GPU whose test never started shows 0 work: gpu-burn still says OK
                          "gpus_no_work": sum(1 for i, p in enumerate(procd)
                                              if p <= 0 or (i < len(gflops) and gflops[i] <= 0)) if procd else None,
                          "gflops_min": min(gflops) if gflops else None})


class NcclCheck(Check):
    name = "nccl"
    needs_gpu = True

    def run(self, ctx: Context, r: CheckResult) -> None:
        ngpu = len(ctx.handles) or int(ctx.expect.get("gpu_count", 1))
        args = ["-b", "1G", "-e", "16G", "-f", "2", "-g", str(ngpu)]
        run = ctx.run("all_reduce_perf", "all_reduce_perf", args, 900)
        if run.missing or run.timed_out or run.error:
            r.tool_problem(run)
            return
        r.evidence.append(run.evidence())
        try:
            # a failed run (a rank's "Test NCCL failure", the launcher's report on stderr) is
            # understood even without a table row
            parsed = parse_nccl_run(run.stdout, run.stderr or "")
        except UnparseableOutput as exc:
            if run.rc != 0:
                r.error("tool_crashed", f"all_reduce_perf exited {run.rc}: {tail(run.stderr or run.stdout, 300)}",
                        tool="all_reduce_perf")
            else:
                _garbage(r, "all_reduce_perf", exc, run.stdout)
            return
        lim = ctx.limits
        k = int(lim.get("busbw_largest_sizes", 2))
        # a run that died (a failure line, the launcher's report, a non-zero exit) or was cut
        # before its summary is judged by that alone: its rows are kept as data, but a busbw
        # from them is no measurement of the node (no busbw_low, nothing for the peers, the
        # baseline or the fleet's figures)
        done = finished(parsed) and run.rc == 0
        busbw = busbw_at_largest(parsed, k) if done else None
        wrong = wrong_total(parsed)
        limits = lim.get("nccl_error_limits") or NCCL_ERROR_LIMITS
        err = error_figures(parsed, limits)
        r.data.update({"rows": parsed["rows"], "avg_busbw": parsed["avg_busbw"], "validated": parsed["validated"],
                       "nccl_version": parsed["nccl_version"], "layout": parsed["layout"],
                       "complete": parsed["complete"], "failures": parsed["failures"][:10],
                       "launcher_failures": parsed["launcher_failures"][:10],
                       "busbw_sizes": largest_sizes(parsed, k) if done else []})
        if not done and parsed["rows"]:
            r.data["rows_from_unfinished_run"] = True
        r.metrics.update({"busbw_largest_gbps": busbw, "wrong_total": wrong, "oob_values": parsed["oob_values"],
                          "error_max": err["max"], "errors_over_limit": err["over"] if err["max"] is not None else None,
                          "largest_size": max((row["size"] for row in parsed["rows"]), default=None)})
        _record(r, nccl_parser.assess(parsed, limits))
        want = lim.get("min_busbw_gbps")
        if want is not None and busbw is not None and busbw < float(want):
            r.find("busbw_low", f"all_reduce busbw {busbw:.1f} GB/s at the {k} largest sizes, below "
                   f"{float(want):.0f} GB/s", value=busbw, limit=want)
        if run.rc != 0 and r.status == "pass":
            r.find("nccl_failed", f"all_reduce_perf exited {run.rc}: {tail(run.stderr, 200)}")
