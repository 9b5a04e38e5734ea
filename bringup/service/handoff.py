"""bringup as NVIDIA NVSentinel's external remediation system (issue #27, item 2): what an
``ExternalRemediationRequest`` says, what bringup does with the node it hands over, and
what bringup writes back. Pure: objects and stages in, values out.

The protocol is NVSentinel's ADR-040 (docs/designs/040-external-remediation-request.md):
NVSentinel creates an ERR (``nvsentinel.dgxc.nvidia.com/v1`` as released, kind
``ExternalRemediationRequest``, cluster-scoped) whose ``spec.healthEvent`` is the triaged health event
(``nodeName``, ``errorCode``, ``componentClass``, ``entitiesImpacted``, ``message``...),
taints the node ``nvsentinel.nvidia.com/external-remediation=<err name>:NoSchedule`` and
sets the condition ``NVSentinelOwnershipReleased=True``: from then on the external system
owns the node. The external system writes ``ExternalRemediationComplete`` ``True`` (the
node is fixed: NVSentinel lifts its taint and takes the node back) or ``False`` (it gave up:
the node stays released). ``Unknown`` is in flight.

The ERR is read into a :class:`~bringup.kube.remediation.Request` by the Kubernetes
adapter's :func:`~bringup.kube.remediation.parse`. :func:`plan` picks bringup's action for a request from ``bringup/data/nvsentinel.yaml``
(first matching rule, fixed operators). :func:`completion` says what to write back, from
where the node's lifecycle is now and where it went since bringup accepted the request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bringup.kube.remediation import Request
from bringup.resources import data_file
from bringup.service.bmc_health import When, named_only
from bringup.service.fault_report import ReportPolicy
from bringup.yamlio import load_model

Action = Literal["reburnin", "reinstall", "inspection"]
#: the facts a rule of nvsentinel.yaml may name
FACTS = ("error_code", "component", "check", "recommended", "custom_action", "fatal")


# --- what bringup does with the node ---------------------------------------------------------
class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    when: list[When] = Field(min_length=1)
    then: Action
    note: str = ""

    @field_validator("when")
    @classmethod
    def _facts(cls, v: list[When]) -> list[When]:
        return named_only(v, FACTS, "fact", "a rule")


class HandoffPolicy(BaseModel):
    """``bringup/data/nvsentinel.yaml``."""

    model_config = ConfigDict(extra="forbid")
    rules: list[Rule] = Field(default_factory=list)
    default: Action = "reburnin"
    #: what bringup's own findings become (an ExternalFault's health event)
    report: ReportPolicy


def load_policy(path: Path | None = None) -> HandoffPolicy:
    return load_model(path or data_file("nvsentinel.yaml"), HandoffPolicy, "NVSentinel hand-off policy")


@dataclass(frozen=True)
class Plan:
    action: Action
    why: str
    reasons: list[str] = field(default_factory=list)


def plan(policy: HandoffPolicy, req: Request) -> Plan:
    """bringup's action for ``req``: the first rule any of its facts match, else the default."""
    for rule in policy.rules:
        if any(all(w.holds(f) for w in rule.when) for f in req.facts()):
            return Plan(rule.then, rule.note or f"nvsentinel.yaml: {rule.then}", reasons(req))
    return Plan(policy.default, f"nvsentinel.yaml: default ({policy.default})", reasons(req))


def reasons(req: Request) -> list[str]:
    """The node's reason for the lifecycle, in NVSentinel's words."""
    codes = ", ".join(req.error_codes) or "no error code"
    return [f"NVSentinel handed the node over ({req.name}: {codes}): {req.message or req.check}".rstrip(": ")]


# --- what bringup writes back --------------------------------------------------------------------
@dataclass(frozen=True)
class Completion:
    status: Literal["True", "False"]
    reason: str
    message: str


def completion(req: Request, stage: str, changes: Sequence[tuple[datetime, str]]) -> Completion | None:
    """``ExternalRemediationComplete`` for an accepted request from the node's stage now and
    its stage changes (time, stage; oldest first): True once the node serves again after
    leaving service since bringup accepted the request; False once it is quarantined since
    then (its re-test failed and bringup gave up on it: the node stays released); None while
    the work goes on, hardware inspection included (the repair is the remediation: an
    operator's ``node repaired``, the re-burn-in and the gate answer it)."""
    if req.accepted_at is None:
        return None
    since = [s for at, s in changes if at >= req.accepted_at]
    left = any(s != "active" for s in since)
    if stage == "active" and left:
        return Completion("True", "RemediatedByBringup",
                          f"bringup re-burned {req.node} in and its readiness gate passed; the node serves again")
    if stage == "quarantined" and left:
        return Completion("False", "QuarantinedByBringup",
                          f"bringup could not return {req.node} to service: it is quarantined (see its NetBox journal)")
    return None
