"""GPU stress and fabric checks driven by external tools: DCGM diag, gpu-burn, nccl-tests."""

from ..parsers import UnparseableOutput
from ..parsers.dcgm import failing_gpus, parse_dcgm_diag
from ..parsers.gpuburn import parse_gpu_burn
from ..parsers.nccl import busbw_at_largest, parse_nccl_perf, wrong_total
from ..proc import tail
from .base import Check, CheckResult, Context


def _garbage(r: CheckResult, tool: str, exc: Exception, stdout: str) -> None:
    r.error("unparseable_output", f"{tool} output is not in the expected format: {exc}", tool=tool)
    r.data["stdout_head"] = stdout[:500]


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
            r.error("dcgm_runtime_error", f"DCGM diag could not run: {parsed['runtime_error']}")
            return
        counts = {"pass": 0, "fail": 0, "warn": 0, "skip": 0, "not_run": 0, "unknown": 0}
        for t in parsed["tests"]:
            counts[t["status"]] += 1
            if t["status"] in ("fail", "warn"):
                gpus = failing_gpus(t)
                msg = "; ".join(t["warnings"][:2])
                r.find("dcgm_failed", f"DCGM {t['name']}: {t['status'].upper()} on GPU {', '.join(gpus) or '?'}"
                       + (f" ({msg})" if msg else ""), test=t["name"],
                       gpu=int(gpus[0]) if len(gpus) == 1 and gpus[0].isdigit() else None)
            elif t["status"] in ("skip", "not_run", "unknown"):
                # a test that did not run verified nothing: never a pass
                r.find("dcgm_not_run", f"DCGM {t['name']}: {t['status'].replace('_', ' ')}", test=t["name"])
        if not parsed["tests"]:
            r.find("dcgm_not_run", "DCGM diag reported no tests")
        r.metrics.update({"tests_passed": counts["pass"], "tests_failed": counts["fail"] + counts["warn"],
                          "tests_not_run": counts["skip"] + counts["not_run"] + counts["unknown"]})
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
        faulty = [g for g, s in parsed["gpus"].items() if s != "OK"]
        for g in faulty:
            r.find("gpuburn_faulty", f"GPU {g}: gpu-burn reports FAULTY (computation errors)", gpu=g)
        if parsed["aborted"]:
            r.find("gpuburn_aborted", "gpu-burn aborted: no workers alive")
        for g in parsed["died"]:
            r.find("gpuburn_died", f"GPU {g}: gpu-burn worker died", gpu=g)
        want = ctx.expect.get("gpu_count")
        if want and parsed["tested"] and parsed["tested"] < int(want):
            r.find("gpuburn_gpu_count", f"gpu-burn tested {parsed['tested']} GPUs, expected {want}")
        r.metrics.update({"faulty_gpus": len(faulty), "errors_total": sum(e for e in parsed["errors"] if e > 0),
                          "gpus_tested": parsed["tested"]})


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
            parsed = parse_nccl_perf(run.stdout)
        except UnparseableOutput as exc:
            if run.rc != 0:
                r.error("tool_crashed", f"all_reduce_perf exited {run.rc}: {tail(run.stderr or run.stdout, 300)}",
                        tool="all_reduce_perf")
            else:
                _garbage(r, "all_reduce_perf", exc, run.stdout)
            return
        lim = ctx.limits
        k = int(lim.get("busbw_largest_sizes", 2))
        busbw = busbw_at_largest(parsed, k)
        wrong = wrong_total(parsed)
        r.data.update({"rows": parsed["rows"], "avg_busbw": parsed["avg_busbw"],
                       "nccl_version": parsed["nccl_version"], "layout": parsed["layout"]})
        r.metrics.update({"busbw_largest_gbps": busbw, "wrong_total": wrong, "oob_values": parsed["oob_values"],
                          "largest_size": max(row["size"] for row in parsed["rows"])})
        if wrong:
            r.find("nccl_wrong", f"all_reduce_perf found {wrong} wrong values (#wrong)", value=wrong)
        if parsed["oob_values"]:
            r.find("nccl_oob", f"Out of bounds values: {parsed['oob_values']}", value=parsed["oob_values"])
        want = lim.get("min_busbw_gbps")
        if want is not None and busbw < float(want):
            r.find("busbw_low", f"all_reduce busbw {busbw:.1f} GB/s at the {k} largest sizes, below "
                   f"{float(want):.0f} GB/s", value=busbw, limit=want)
        if run.rc != 0 and r.status == "pass":
            r.find("nccl_failed", f"all_reduce_perf exited {run.rc}: {tail(run.stderr, 200)}")
