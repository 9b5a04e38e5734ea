"""The readiness gate: may a joined node be admitted? (issue #15, item 1)

A node joins the cluster tainted ``bringup.io/validation-pending:NoSchedule``; it is
admitted (taint removed, NetBox active) only when the cluster shows it can really give
out its GPUs:

- the node is registered and Ready;
- ``nvidia.com/gpu`` allocatable *equals* the GPU count NetBox expects (a device plugin
  that sees 7 of 8 GPUs is a node that lost one, not a smaller node);
- the GPU labels agree with NetBox and the image manifest (product, count, memory,
  driver), by the operators of ``bringup/data/readiness.yaml``;
- a smoke pod runs to success on it (:mod:`bringup.admission.smoke`).

Everything here is pure: a :class:`NodeFacts` (what the API server says) and an
:class:`Expected` (what NetBox and the manifest say) in, :class:`Check` values out. A
check whose input is missing or unreadable fails as ``unknown``: the gate never passes
on what it could not read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bringup.admission.labels import Taint, gpu_product_label
from bringup.resources import data_file
from bringup.yamlio import load_model

Outcome = Literal["pass", "fail", "unknown"]
ExpectField = Literal["gpu_product", "gpu_count", "gpu_memory_mib", "driver"]
Op = Literal["equals", "within_percent", "version_prefix"]


class LabelRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: one label, or several joined with "+" whose values are joined with "." (GFD's
    #: driver major/minor/rev)
    key: str
    expect: ExpectField
    op: Op
    value: float | None = Field(default=None, ge=0)
    #: an absent label fails the check (default: only a present one is compared)
    required: bool = False

    @property
    def keys(self) -> list[str]:
        return self.key.split("+")


class SmokePolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    namespace: str
    image: str
    timeout_s: float = Field(gt=0)
    command: list[str] = Field(min_length=1)
    log_limit: int = Field(gt=0)


class ReadinessPolicy(BaseModel):
    """``bringup/data/readiness.yaml``."""

    model_config = ConfigDict(extra="forbid")
    taint: Taint
    gpu_resource: str
    labels: list[LabelRule]
    smoke: SmokePolicy


def load_policy(path: Path | None = None) -> ReadinessPolicy:
    """The gate's policy; a bad key or value is a ConfigError naming it (file:line)."""
    return load_model(path or data_file("readiness.yaml"), ReadinessPolicy, "readiness policy")


@dataclass(frozen=True)
class Expected:
    """What NetBox (the node's SKU) and the image manifest say the node has."""

    gpu_count: int
    gpu_model: str
    gpu_memory_mib: int
    driver: str
    #: the node's GPUs NetBox holds out of service (quarantined one by one, issue #27 item
    #: 3): the device plugin hands out the others only; GFD still counts them all
    gpus_out: tuple[int, ...] = ()

    @property
    def serving_gpus(self) -> int:
        """The whole GPUs the node should hand out: the SKU's less those out of service."""
        return max(self.gpu_count - len(set(self.gpus_out)), 0)

    def counted(self) -> str:
        """NetBox's count in words, with the GPUs out of service when there are any."""
        out = sorted(set(self.gpus_out))
        return str(self.serving_gpus) + (f" ({self.gpu_count} less GPU {', '.join(map(str, out))} out of service)"
                                         if out else "")

    def value(self, name: ExpectField) -> str:
        if name == "gpu_product":
            return gpu_product_label(self.gpu_model)
        return str(getattr(self, name))


@dataclass(frozen=True)
class NodeFacts:
    """What the API server says about the node (None: it never registered)."""

    registered: bool
    ready: bool | None = None
    ready_reason: str = ""
    allocatable: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    name: str
    outcome: Outcome
    detail: str

    @property
    def ok(self) -> bool:
        return self.outcome == "pass"


def _quantity(text: str) -> int | None:
    # a device-plugin resource is a plain integer quantity ("8"); anything else is unreadable
    return int(text) if re.fullmatch(r"\d+", text.strip()) else None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def compare(rule: LabelRule, got: str, want: str) -> Check:
    """One label rule against the label's value (already joined for multi-key rules)."""
    name = f"label {rule.key}"
    if rule.op == "equals":
        ok = got == want
        return Check(name, "pass" if ok else "fail", f"{rule.key}={got!r}" + ("" if ok else f", expected {want!r}"))
    if rule.op == "within_percent":
        g, w = _number(got), _number(want)
        if g is None or w is None or w == 0:
            return Check(name, "unknown", f"{rule.key}={got!r} is not a number to compare with {want!r}")
        diff = abs(g - w) / w * 100
        ok = diff <= (rule.value or 0)
        return Check(name, "pass" if ok else "fail",
                     f"{rule.key}={got!r}, expected {want!r} within {rule.value:g} % (off by {diff:.2f} %)")
    # version_prefix: "570.133" is a prefix of "570.133.20" by components, "570.13" is not
    if not re.fullmatch(r"\d+(\.\d+)*", got):
        return Check(name, "unknown", f"{rule.key}={got!r} is not a version")
    ok = want.split(".")[: len(got.split("."))] == got.split(".")
    return Check(name, "pass" if ok else "fail", f"{rule.key}={got!r}" + ("" if ok else f", expected {want!r}"))


def label_checks(policy: ReadinessPolicy, labels: Mapping[str, str], expected: Expected) -> list[Check]:
    checks = []
    for rule in policy.labels:
        values = [labels.get(k) for k in rule.keys]
        present = [v for v in values if v is not None]
        if not present:
            outcome: Outcome = "fail" if rule.required else "pass"
            checks.append(Check(f"label {rule.key}", outcome,
                                f"{rule.key} not set" + (" (required)" if rule.required else " (not compared)")))
            continue
        # multi-key rules use the leading labels that are present (GFD may omit rev)
        leading = []
        for v in values:
            if v is None:
                break
            leading.append(v)
        got = ".".join(leading) if leading else ".".join(present)
        checks.append(compare(rule, got, expected.value(rule.expect)))
    return checks


#: label rules whose value a sharing mode changes (GFD's count, product and memory are the shares')
SHARED_FIELDS = ("gpu_product", "gpu_count", "gpu_memory_mib")


def node_checks(policy: ReadinessPolicy, node: NodeFacts, expected: Expected,
                shared: Sequence[Check] | None = None) -> list[Check]:
    """Registered, Ready, allocatable GPUs equal to NetBox's count, and the labels.

    ``shared``: the checks of a MIG or time-sliced pool's resources and labels
    (:func:`bringup.admission.sharing.judge_sharing`); they take the place of the whole-GPU
    allocatable check and of the label rules on GPU product, count and memory."""
    if not node.registered:
        return [Check("registered", "fail", "the node never registered with the cluster")]
    checks = [Check("registered", "pass", "registered")]
    if node.ready is None:
        checks.append(Check("ready", "unknown", "the node has no Ready condition"))
    else:
        checks.append(Check("ready", "pass" if node.ready else "fail",
                            "Ready" if node.ready else f"not Ready ({node.ready_reason or 'no reason given'})"))
    if shared is not None:
        checks.extend(shared)
        rules = policy.model_copy(update={"labels": [r for r in policy.labels if r.expect not in SHARED_FIELDS]})
        checks.extend(label_checks(rules, node.labels, expected))
        return checks
    res = policy.gpu_resource
    raw = node.allocatable.get(res)
    if raw is None:
        checks.append(Check("allocatable", "fail", f"the device plugin advertises no {res} "
                                                   f"(allocatable has none; NetBox expects {expected.counted()})"))
    else:
        got = _quantity(raw)
        if got is None:
            checks.append(Check("allocatable", "unknown", f"allocatable {res} is {raw!r}, not a count"))
        else:
            ok = got == expected.serving_gpus
            checks.append(Check("allocatable", "pass" if ok else "fail",
                                f"allocatable {res}: {got}" + ("" if ok else f", NetBox expects {expected.counted()}")
                                + (f" ({expected.counted()})" if ok and expected.gpus_out else "")))
    checks.extend(label_checks(policy, node.labels, expected))
    return checks


def failures(checks: Sequence[Check]) -> list[str]:
    """The reasons the gate refuses, one per check that did not pass (unknown included)."""
    return [f"{c.name}: {c.detail}" + (" (could not be read)" if c.outcome == "unknown" else "")
            for c in checks if not c.ok]
