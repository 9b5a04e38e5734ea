"""What every check is: a name, a support test and a run that returns a result.

A check never raises: the runner turns an exception or an overrun into an ``error`` result.
Statuses: ``pass``, ``fail``, ``skip`` (the plan or an earlier failure ruled it out),
``unsupported`` (this hardware/driver cannot answer) and ``error`` (the check could not do
its job: tool missing, output unreadable, NVML down). Only ``pass`` counts as passed.
"""

import time
from dataclasses import dataclass, field
from typing import Any

from ..nvml import Nvml
from ..proc import ToolRun, run_tool


@dataclass
class CheckResult:
    name: str
    status: str = "pass"
    summary: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    started: float = 0.0
    duration_s: float = 0.0

    def find(self, code: str, message: str, fail: bool = True, **where: Any) -> None:
        """Record a finding; a failing one turns a passing check into ``fail``."""
        item = {"code": code, "message": message, "severity": "fail" if fail else "info"}
        item.update({k: v for k, v in where.items() if v is not None})
        self.findings.append(item)
        if fail and self.status == "pass":
            self.status = "fail"

    def error(self, code: str, message: str, **where: Any) -> "CheckResult":
        self.findings.append(dict({"code": code, "message": message, "severity": "error"}, **where))
        self.status = "error"
        return self

    def tool_problem(self, run: ToolRun) -> bool:
        """Record a missing/hung/crashed tool; True when there was one."""
        self.evidence.append(run.evidence())
        problem = run.problem()
        if not problem:
            return False
        name = run.argv[0].rsplit("/", 1)[-1] if run.argv else "tool"
        if run.missing:
            self.error("tool_missing", problem, tool=name)
        elif run.timed_out:
            self.status = "fail"
            self.findings.append({"code": "tool_timeout", "message": problem, "severity": "fail", "tool": name})
        else:
            self.error("tool_crashed", problem, tool=name)
        return True

    def to_dict(self) -> dict[str, Any]:
        if not self.summary:
            bad = [f["message"] for f in self.findings if f["severity"] != "info"]
            self.summary = "; ".join(bad[:3]) if bad else self.status
        return {
            "name": self.name, "status": self.status, "summary": self.summary,
            "started": _iso(self.started), "duration_s": round(self.duration_s, 3),
            "findings": self.findings, "metrics": self.metrics, "data": self.data,
            "evidence": self.evidence,
        }


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)) if t else ""


class Context:
    """What checks share: the plan, NVML, GPU handles and the telemetry of the stress phase."""

    def __init__(self, plan: dict[str, Any], nvml: Nvml) -> None:
        self.plan = plan
        self.nvml = nvml
        self.handles: list[Any] = []
        self.samples: list[dict[str, Any]] = []
        self.xid_watcher: Any = None
        self.results: dict[str, CheckResult] = {}

    @property
    def expect(self) -> dict[str, Any]:
        return self.plan.get("expect") or {}

    @property
    def limits(self) -> dict[str, Any]:
        return self.plan.get("limits") or {}

    def tool(self, key: str) -> dict[str, Any]:
        return (self.plan.get("tools") or {}).get(key) or {}

    def run(self, key: str, default_cmd: str, default_args: list[str], default_timeout: float,
            extra: list[str] | None = None) -> ToolRun:
        spec = self.tool(key)
        argv = [spec.get("path") or default_cmd] + list(spec.get("args", default_args)) + list(extra or [])
        return run_tool(argv, float(spec.get("timeout_s", default_timeout)), env=spec.get("env"))


class Check:
    name = "check"
    needs_gpu = False

    def supported(self, ctx: Context) -> str | None:
        """None when the check can run here, else why not (-> ``unsupported``)."""
        return None

    def run(self, ctx: Context, result: CheckResult) -> None:
        raise NotImplementedError
