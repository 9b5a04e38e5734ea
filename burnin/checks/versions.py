"""Installed driver / CUDA / NCCL / kernel against the image manifest's pinned versions.

Sources: NVML for the driver and the CUDA version the driver supports, ``dpkg-query -W``
for packages such as libnccl2, ``uname -r`` for the kernel.
"""

from ..nvml import NvmlFailure, Unsupported
from ..parsers.system import parse_dpkg_query
from .base import Check, CheckResult, Context


def _ver_tuple(v: str):
    return tuple(int(x) for x in v.replace("-", ".").split(".") if x.isdigit())


class VersionsCheck(Check):
    name = "versions"

    def run(self, ctx: Context, r: CheckResult) -> None:
        want = ctx.plan.get("versions") or {}
        got = {}
        n = ctx.nvml
        if n.ok:
            try:
                got["driver"] = n.call("nvmlSystemGetDriverVersion")
                cuda = n.call("nvmlSystemGetCudaDriverVersion")
                got["cuda"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
            except (Unsupported, NvmlFailure) as exc:
                r.data["nvml_error"] = str(exc)
        else:
            r.data["nvml_error"] = n.error
        packages = want.get("packages") or {}
        if packages:
            fmt = "${Package}\\t${Version}\\n"
            run = ctx.run("dpkg_query", "dpkg-query", ["-W", f"-f={fmt}"], 30, extra=sorted(packages.values()))
            r.evidence.append(run.evidence())
            if run.missing or run.timed_out:
                r.tool_problem(run)
                return
            installed = parse_dpkg_query(run.stdout)
            for key, pkg in packages.items():
                got[key] = installed.get(pkg)
        if want.get("kernel"):
            run = ctx.run("uname", "uname", ["-r"], 10)
            r.evidence.append(run.evidence())
            got["kernel"] = run.stdout.strip() if run.ok else None
        r.data["installed"] = got
        r.data["expected"] = {k: v for k, v in want.items() if k != "packages"}
        mismatches = 0
        keys = ["driver", "kernel"] + sorted(packages)
        for key in keys:
            expected = want.get(key)
            if expected is None:
                continue
            have = got.get(key)
            if have is None:
                mismatches += 1
                r.find(f"{key}_missing", f"{key}: expected {expected}, not installed", component=key)
            elif str(have) != str(expected):
                mismatches += 1
                r.find(f"{key}_mismatch", f"{key}: installed {have}, image pins {expected}", component=key,
                       value=have, limit=expected)
        if want.get("cuda") and got.get("cuda"):
            # the driver reports the newest CUDA it supports; it must cover the pinned toolkit
            if _ver_tuple(got["cuda"]) < _ver_tuple(str(want["cuda"])):
                mismatches += 1
                r.find("cuda_mismatch", f"driver supports CUDA {got['cuda']}, image pins CUDA {want['cuda']}",
                       component="cuda", value=got["cuda"], limit=want["cuda"])
        elif want.get("cuda"):
            mismatches += 1
            r.find("cuda_missing", "the CUDA driver version could not be read", component="cuda")
        r.metrics["mismatches"] = mismatches
