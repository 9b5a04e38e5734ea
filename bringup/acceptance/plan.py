"""Build the plan JSON the burn-in agent runs, from the SKU, its thresholds and the image
manifest's pinned versions. The agent reads only this document; it needs none of our code.

Each plan carries its own time budget: every check gets a budget (its tool's timeout or
duration plus slack, or a fixed allowance for the NVML and host queries) that the agent
enforces per check, and the run's budget ``budget_s`` is their sum plus a margin. The
controller kills the agent only past ``budget_s`` (``run_burnin``), so a long profile is
never cut short by a fixed timeout while a hung node still is, in bounded time.
"""

from __future__ import annotations

from typing import Any, Literal

from bringup.acceptance.thresholds import SkuThresholds
from bringup.errors import ConfigError
from bringup.sku import SkuSpec

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
              "max_ecc_corrected_volatile", "max_ecc_uncorrected_aggregate", "max_ecc_corrected_aggregate",
              "max_ecc_sram_uncorrected_aggregate", "max_ecc_sram_corrected_aggregate",
              "max_remapped_rows_uncorrectable", "max_nvlink_errors", "max_pcie_replay", "min_disk_write_mib_s",
              "nccl_error_limits", "dcgm_required_tests")

#: seconds allowed to a check that only queries NVML, sysfs or the kernel log
FIXED_CHECK_S = 60.0
#: the slack added to a tool's own timeout before the agent gives up on its check
CHECK_SLACK_S = 30.0
#: the run's margin over the sum of its checks: agent start, telemetry, writing the document
MARGIN_FRACTION = 0.10
MARGIN_S = 120.0
#: how long the agent waits past a tool's duration before killing it (the agent's default)
TOOL_GRACE_S = 60.0


def make_plan(sku: SkuSpec, thresholds: SkuThresholds, manifest_versions: dict[str, Any],
              profile: Profile = "quick", node: str = "", checks: list[str] | None = None,
              tool_paths: dict[str, str] | None = None, scale: float = 1.0) -> dict[str, Any]:
    """The plan document for one node.

    ``manifest_versions`` holds the image manifest's pins: ``driver``, ``cuda``, ``nccl``,
    ``kernel`` (extra keys are ignored). ``checks`` narrows the run (default: the SKU's
    required checks; the judge still requires all of them). ``tool_paths`` maps tool keys
    (``dcgmi``, ``gpu_burn``, ``all_reduce_perf``, ``stress_ng``, ``fio``, ``ibstat``) to
    absolute paths on the node. ``scale`` multiplies tool durations and timeouts (tests run
    the full profile scaled down). The plan's ``check_timeouts_s`` and ``budget_s`` follow.
    """
    if profile not in _TOOLS:
        raise ConfigError(f"unknown burn-in profile {profile!r}", hint="use 'quick' or 'full'")
    if not 0 < scale <= 1:
        raise ConfigError(f"scale {scale} is not in (0, 1]", hint="scale only shortens a profile")
    if thresholds.sku != sku.sku:
        raise ConfigError(f"thresholds are for {thresholds.sku}, the node is a {sku.sku}",
                          hint="build thresholds with bringup.acceptance.thresholds.thresholds_for(sku)")
    missing = [k for k in ("driver", "cuda", "nccl", "kernel") if not manifest_versions.get(k)]
    if missing:
        raise ConfigError(f"the image manifest gives no version for: {', '.join(missing)}",
                          hint="pin them in images/<image>.yaml")
    v = thresholds.values
    tools: dict[str, dict[str, Any]] = {}
    for key, spec in _TOOLS[profile].items():
        spec = _scaled(dict(spec), scale)
        size_args = spec.pop("args_size", None)
        if size_args is not None:
            spec["args"] = size_args + ["-g", str(sku.gpu.count)]
        if tool_paths and key in tool_paths:
            spec["path"] = tool_paths[key]
        tools[key] = spec
    selected = list(checks) if checks else list(thresholds.required_checks)
    durations = dict(_DURATIONS[profile])
    # a scaled-down stress phase is short: sample it as densely, or no sample lands under load
    durations["telemetry_s"] = max(0.1, durations["telemetry_s"] * scale)
    durations["sample_interval_s"] = max(0.05, durations["sample_interval_s"] * scale)
    plan = {
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
        "limits": _limits(v, profile),
        "versions": {
            "driver": str(manifest_versions["driver"]), "cuda": str(manifest_versions["cuda"]),
            "nccl": str(manifest_versions["nccl"]), "kernel": str(manifest_versions["kernel"]),
            "packages": dict(PACKAGES),
        },
        "tools": tools,
        "durations": durations,
        "kernel_log": {},
    }
    plan["check_timeouts_s"] = check_budgets(plan)
    plan["budget_s"] = plan_budget_s(plan)
    return plan


def _limits(values: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """The thresholds the agent applies; ``dcgm_required_tests`` may be given per profile
    (each profile runs another DCGM level: ``{quick: [...], full: [...]}``)."""
    limits = {k: values[k] for k in LIMIT_KEYS if k in values}
    req = limits.get("dcgm_required_tests")
    if isinstance(req, dict):
        limits["dcgm_required_tests"] = list(req.get(profile) or [])
    return limits


def _scaled(spec: dict[str, Any], scale: float) -> dict[str, Any]:
    """A tool spec with durations and timeouts multiplied by ``scale`` (tests run the full
    profile in seconds); sizes are left alone."""
    if scale == 1.0:
        return spec
    if "duration_s" in spec:
        spec["duration_s"] = max(1, round(spec["duration_s"] * scale))
    if "timeout_s" in spec:
        spec["timeout_s"] = max(5, round(spec["timeout_s"] * scale))
    return spec


def check_budgets(plan: dict[str, Any]) -> dict[str, float]:
    """Seconds each planned check may take, from its tool's timeout or duration (as the
    agent runs it) plus slack; checks without a tool get :data:`FIXED_CHECK_S`."""
    tools = plan.get("tools") or {}

    def tool_s(key: str, default_timeout: float) -> float:
        spec = tools.get(key) or {}
        if "timeout_s" in spec:
            return float(spec["timeout_s"])
        if "duration_s" in spec:
            return float(spec["duration_s"]) + TOOL_GRACE_S
        return default_timeout

    by_tool = {"dcgm": tool_s("dcgmi", 600), "gpu_burn": tool_s("gpu_burn", 10 + TOOL_GRACE_S),
               "nccl": tool_s("all_reduce_perf", 900), "cpu_mem": tool_s("stress_ng", 60 + TOOL_GRACE_S),
               "disk": tool_s("fio", 30 + TOOL_GRACE_S),
               # sysfs plus ibstat as a second opinion
               "network": FIXED_CHECK_S + tool_s("ibstat", 30)}
    return {name: by_tool.get(name, 0.0) + CHECK_SLACK_S if name in by_tool else FIXED_CHECK_S
            for name in plan.get("checks", [])}


def plan_budget_s(plan: dict[str, Any]) -> int:
    """The whole run's time budget: the checks' budgets, the telemetry of a run without a
    stress check, plus :data:`MARGIN_FRACTION` and :data:`MARGIN_S`."""
    budgets = plan.get("check_timeouts_s") or check_budgets(plan)
    total = sum(float(b) for b in budgets.values()) + float((plan.get("durations") or {}).get("telemetry_s", 0))
    return int(total * (1 + MARGIN_FRACTION) + MARGIN_S)


def manifest_versions(image: dict[str, Any]) -> dict[str, Any]:
    """The pins of an image manifest (``images/<name>.yaml`` as loaded YAML), flattened."""
    pk = image.get("packages") or {}
    return {"driver": pk.get("driver"), "cuda": pk.get("cuda"), "nccl": pk.get("nccl"),
            "kernel": (image.get("os") or {}).get("kernel"), "dcgm": pk.get("dcgm"),
            "nccl_tests": pk.get("nccl_tests")}
