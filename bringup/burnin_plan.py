"""Build the plan JSON the burn-in agent runs, from the SKU, its thresholds and the image
manifest's pinned versions. The agent reads only this document; it needs none of our code."""

from __future__ import annotations

from typing import Any, Literal

from .burnin_thresholds import SkuThresholds
from .errors import ConfigError
from .sku import SkuSpec

PLAN_SCHEMA_VERSION = 1
Profile = Literal["quick", "full"]

#: package that carries each version the agent checks through dpkg-query
PACKAGES = {"nccl": "libnccl2"}

_TOOLS: dict[str, dict[str, Any]] = {
    # quick: seconds in the lab, a smoke test on real hardware
    "quick": {
        "dcgmi": {"args": ["diag", "-r", "1", "-j"], "timeout_s": 300},
        "gpu_burn": {"duration_s": 5, "args": ["-d"]},
        "all_reduce_perf": {"args_size": ["-b", "1G", "-e", "16G", "-f", "2"], "timeout_s": 600},
        "stress_ng": {"duration_s": 1, "vm_bytes": "64M"},
        "fio": {"duration_s": 1, "size": "16M"},
        "ibstat": {"timeout_s": 30},
    },
    # full: the acceptance run
    "full": {
        "dcgmi": {"args": ["diag", "-r", "3", "-j"], "timeout_s": 3600},
        "gpu_burn": {"duration_s": 900, "args": ["-d"]},
        "all_reduce_perf": {"args_size": ["-b", "8", "-e", "16G", "-f", "2"], "timeout_s": 1800},
        "stress_ng": {"duration_s": 600, "vm_bytes": "50%"},
        "fio": {"duration_s": 120, "size": "4G"},
        "ibstat": {"timeout_s": 30},
    },
}
_DURATIONS = {"quick": {"sample_interval_s": 0.1, "telemetry_s": 0.5, "xid_wait_ms": 100},
              "full": {"sample_interval_s": 2.0, "telemetry_s": 30.0, "xid_wait_ms": 500}}

LIMIT_KEYS = ("min_busbw_gbps", "busbw_largest_sizes", "max_temp_c", "fatal_xids", "max_ecc_uncorrected",
              "max_ecc_corrected_volatile", "max_nvlink_errors", "max_pcie_replay", "min_disk_write_mib_s")


def make_plan(sku: SkuSpec, thresholds: SkuThresholds, manifest_versions: dict[str, Any],
              profile: Profile = "quick", node: str = "", checks: list[str] | None = None,
              tool_paths: dict[str, str] | None = None) -> dict[str, Any]:
    """The plan document for one node.

    ``manifest_versions`` holds the image manifest's pins: ``driver``, ``cuda``, ``nccl``,
    ``kernel`` (extra keys are ignored). ``checks`` narrows the run (default: the SKU's
    required checks; the judge still requires all of them). ``tool_paths`` maps tool keys
    (``dcgmi``, ``gpu_burn``, ``all_reduce_perf``, ``stress_ng``, ``fio``, ``ibstat``) to
    absolute paths on the node.
    """
    if profile not in _TOOLS:
        raise ConfigError(f"unknown burn-in profile {profile!r}", hint="use 'quick' or 'full'")
    if thresholds.sku != sku.sku:
        raise ConfigError(f"thresholds are for {thresholds.sku}, the node is a {sku.sku}",
                          hint="build thresholds with bringup.burnin_thresholds.thresholds_for(sku)")
    missing = [k for k in ("driver", "cuda", "nccl", "kernel") if not manifest_versions.get(k)]
    if missing:
        raise ConfigError(f"the image manifest gives no version for: {', '.join(missing)}",
                          hint="pin them in images/<image>.yaml")
    v = thresholds.values
    tools: dict[str, dict[str, Any]] = {}
    for key, spec in _TOOLS[profile].items():
        spec = dict(spec)
        size_args = spec.pop("args_size", None)
        if size_args is not None:
            spec["args"] = size_args + ["-g", str(sku.gpu.count)]
        if tool_paths and key in tool_paths:
            spec["path"] = tool_paths[key]
        tools[key] = spec
    selected = list(checks) if checks else list(thresholds.required_checks)
    return {
        "schema_version": PLAN_SCHEMA_VERSION,
        "node": node,
        "sku": sku.sku,
        "profile": profile,
        "checks": selected,
        "expect": {
            "gpu_count": sku.gpu.count, "gpu_name": sku.gpu.model, "memory_mib": sku.gpu.memory_mib,
            "pcie_gen": sku.gpu.pcie_gen, "pcie_width": sku.gpu.pcie_width, "nvlink_links": sku.gpu.nvlink_links,
            "ecc": sku.gpu.ecc, "ib_ports": sku.nics.compute, "ib_rate_gbps": sku.nics.compute_speed_gbps,
        },
        "limits": {k: v[k] for k in LIMIT_KEYS if k in v},
        "versions": {
            "driver": str(manifest_versions["driver"]), "cuda": str(manifest_versions["cuda"]),
            "nccl": str(manifest_versions["nccl"]), "kernel": str(manifest_versions["kernel"]),
            "packages": dict(PACKAGES),
        },
        "tools": tools,
        "durations": dict(_DURATIONS[profile]),
        "kernel_log": {},
    }


def manifest_versions(image: dict[str, Any]) -> dict[str, Any]:
    """The pins of an image manifest (``images/<name>.yaml`` as loaded YAML), flattened."""
    pk = image.get("packages") or {}
    return {"driver": pk.get("driver"), "cuda": pk.get("cuda"), "nccl": pk.get("nccl"),
            "kernel": (image.get("os") or {}).get("kernel"), "dcgm": pk.get("dcgm"),
            "nccl_tests": pk.get("nccl_tests")}
