"""The burn-in agent's result document, parsed into typed models.

The agent (``burnin/``) writes plain JSON; this module is the library's one reader of it.
A garbage or partial document raises :class:`~bringup.errors.ParseError` naming the JSON
path, so a broken run can never be mistaken for a passing one.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.errors import ParseError

SCHEMA_VERSION = 1
Status = Literal["pass", "fail", "skip", "unsupported", "error"]


class Finding(BaseModel):
    """One observation of a check; ``severity`` fail/error findings are why a check failed."""

    model_config = ConfigDict(extra="allow")
    code: str
    message: str
    severity: Literal["fail", "error", "info"] = "fail"
    gpu: int | None = None
    link: int | None = None
    port: str | None = None
    tool: str | None = None
    test: str | None = None
    component: str | None = None
    value: Any = None
    limit: Any = None


class CheckOutcome(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    status: Status
    summary: str = ""
    started: str = ""
    duration_s: float = 0.0
    findings: list[Finding] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)
    evidence: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity in ("fail", "error")]


class NodeInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = ""
    hostname: str = ""
    kernel: str = ""


class BurnInResult(BaseModel):
    model_config = ConfigDict(extra="allow")
    schema_version: int
    agent_version: str
    node: NodeInfo
    started: str
    finished: str
    plan: dict[str, Any]
    checks: list[CheckOutcome]
    summary: dict[str, Any] = Field(default_factory=dict)
    #: the agent was stopped before its end: ``running`` is the check under way then,
    #: ``pending`` those not started, ``stopped`` how it was stopped (when it knew)
    partial: bool = False
    running: str | None = None
    pending: list[str] = Field(default_factory=list)
    stopped: str | None = None

    @property
    def unfinished(self) -> str | None:
        """The step that did not finish in a partial document."""
        if not self.partial:
            return None
        return self.running or (self.pending[0] if self.pending else None)

    def serials(self) -> list[str | None]:
        """GPU serials as NVML reported them (inventory), in NVML order."""
        inv = self.check("inventory")
        gpus = inv.data.get("gpus", []) if inv is not None else []
        return [g.get("serial") if isinstance(g, dict) else None for g in gpus]

    def check(self, name: str) -> CheckOutcome | None:
        for c in self.checks:
            if c.name == name:
                return c
        return None

    @property
    def planned_checks(self) -> list[str]:
        names = self.plan.get("checks") if isinstance(self.plan, dict) else None
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def metric(self, check: str, name: str) -> Any:
        c = self.check(check)
        return None if c is None else c.metrics.get(name)


def _json_path(loc: tuple[Any, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def parse_result(doc: str | bytes | dict[str, Any], source: str = "burn-in result") -> BurnInResult:
    """Parse the agent's JSON (text or already-decoded) into a :class:`BurnInResult`."""
    if isinstance(doc, bytes | str):
        text = doc.decode("utf-8", "replace") if isinstance(doc, bytes) else doc
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise ParseError(f"not JSON: {exc.args[0] if exc.args else exc}", path="$", source=source,
                             hint="look at the agent's stderr; the run may have been cut off") from None
    if not isinstance(doc, dict):
        raise ParseError("the result document is not a JSON object", path="$", source=source)
    if "checks" not in doc and "error" in doc:
        raise ParseError(f"the agent refused to run: {doc['error']}", path="$.error", source=source,
                         hint="fix the plan (bringup.acceptance.plan.make_plan) and run again")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ParseError(f"schema_version {doc.get('schema_version')!r} is not {SCHEMA_VERSION}",
                         path="$.schema_version", source=source,
                         hint="deploy the agent version that matches this controller")
    try:
        return BurnInResult.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ParseError(first["msg"], path=_json_path(tuple(first["loc"])), source=source,
                         hint="the document is partial or from an incompatible agent; re-run burn-in") from None
