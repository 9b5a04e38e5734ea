"""Peers and baselines: a node's burn-in figures against identical nodes and against its own
last accepted burn-in. Pure policy, no I/O: the judge stage fetches the documents.

Why a robust rule: a fleet's figures are tight with the odd bad node, so the peer median and
the median absolute deviation (MAD, scaled by 1.4826 to estimate a standard deviation for
normal data) are not dragged by the very outliers they are meant to find, as a mean and
standard deviation would be. A value is an outlier when it lies more than ``k`` scaled MADs
from the peer median *on the bad side* of its figure (lower busbw is bad, a lower
temperature is not) and, because identical simulated or freshly racked nodes give a MAD of
zero, also more than ``min_relative`` of the median away: a 0.1 % difference is not a fault.

Peers are grouped by SKU (the caller passes only nodes of the node's SKU) and by the
versions named in ``group_by`` (driver, GPU VBIOS, CUDA): a driver upgrade changes figures,
and such nodes are not each other's peers. Every figure gets a :class:`FigureCheck`: ``ok``,
``outlier`` (with the YAML's ``warn`` or ``fail``) or ``skipped`` with why ("3 peers, 5
needed"), so a comparison that could not be made is reported, never passed silently.
Everything here is configured by the ``peers:`` section of ``bringup/data/thresholds.yaml``
and evaluated with the fixed directions below (never ``eval``).
"""

from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bringup.acceptance.result import BurnInResult, parse_result
from bringup.errors import BringupError

#: MAD -> standard deviation for normally distributed data
MAD_SCALE = 1.4826

#: the side of a figure that is bad, as a fixed operator: ``WORSE[worse](value, reference)``
#: is true when value is on the bad side of reference
WORSE = {"lower": operator.lt, "higher": operator.gt}
#: the word reason codes and messages use for the bad side
SIDE = {"lower": "below", "higher": "above"}


def _inventory(result: BurnInResult, key: str) -> Any:
    c = result.check("inventory")
    return (c.data if c is not None else {}).get(key)


def _vbios(result: BurnInResult) -> str | None:
    c = result.check("inventory")
    gpus = (c.data if c is not None else {}).get("gpus") or []
    found = sorted({str(g["vbios"]) for g in gpus if isinstance(g, dict) and g.get("vbios")})
    return ",".join(found) or None


def _installed(result: BurnInResult, key: str) -> Any:
    c = result.check("versions")
    installed = (c.data if c is not None else {}).get("installed")
    return installed.get(key) if isinstance(installed, dict) else None


#: the versions peers may be grouped by, each read from where the agent reports it (NVML's
#: inventory first, the versions check as a fallback); a fixed set, named in the YAML
GROUP_KEYS = {
    "driver": lambda r: _inventory(r, "driver_version") or _installed(r, "driver"),
    "cuda": lambda r: _inventory(r, "cuda_driver_version") or _installed(r, "cuda"),
    "vbios": _vbios,
}


class Figure(BaseModel):
    """One figure compared with peers: ``metric`` of ``check``, whose ``worse`` side is bad."""

    model_config = ConfigDict(extra="forbid")
    check: str
    metric: str
    worse: Literal["lower", "higher"]
    #: what an outlier against the peers weighs in the verdict
    action: Literal["warn", "fail"] = "warn"
    #: overrides of the policy-wide values for this figure
    k: float | None = Field(default=None, gt=0)
    min_relative: float | None = Field(default=None, ge=0)
    unit: str = ""


class Baseline(BaseModel):
    """The node against its own last accepted burn-in."""

    model_config = ConfigDict(extra="forbid")
    #: a change to the bad side by more than this share of the baseline is an outlier
    max_change: float = Field(default=0.10, ge=0)
    action: Literal["warn", "fail"] = "warn"


class PeerPolicy(BaseModel):
    """The ``peers:`` section of thresholds.yaml."""

    model_config = ConfigDict(extra="forbid")
    min_peers: int = Field(default=5, ge=1)
    #: the most peers read per judgement (the most recently burned in): bounds NetBox reads
    max_peers: int = Field(default=32, ge=1)
    k: float = Field(default=3.5, gt=0)
    min_relative: float = Field(default=0.05, ge=0)
    group_by: list[Literal["driver", "cuda", "vbios"]] = Field(default_factory=lambda: ["driver"])
    baseline: Baseline = Field(default_factory=Baseline)
    figures: dict[str, Figure] = Field(default_factory=lambda: {
        "busbw": Figure(check="nccl", metric="busbw_largest_gbps", worse="lower", action="fail", unit="GB/s")})


Outcome = Literal["ok", "outlier", "skipped"]


class FigureCheck(BaseModel):
    """The outcome of one figure against the peers or the baseline, kept in the verdict."""

    figure: str
    against: Literal["peers", "baseline"]
    outcome: Outcome
    message: str
    action: Literal["warn", "fail"] | None = None
    code: str | None = None
    check: str = ""
    value: float | None = None
    reference: float | None = None
    spread: float | None = None
    peers: int = 0


@dataclass
class PeerReport:
    checks: list[FigureCheck] = field(default_factory=list)
    #: peer documents that could not be used, with why (malformed, unfinished)
    findings: list[str] = field(default_factory=list)
    group: dict[str, Any] = field(default_factory=dict)


def group_of(result: BurnInResult, policy: PeerPolicy) -> dict[str, Any]:
    return {key: GROUP_KEYS[key](result) for key in policy.group_by}


def figure_value(result: BurnInResult, fig: Figure) -> float | None:
    """The figure as a number, or None when absent or not a number (bool is not one)."""
    v = result.metric(fig.check, fig.metric)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def figures(result: BurnInResult, policy: PeerPolicy) -> dict[str, float]:
    """Every configured figure the result carries: the baseline the next burn-in meets."""
    out = {}
    for name, fig in policy.figures.items():
        v = figure_value(result, fig)
        if v is not None:
            out[name] = v
    return out


def _usable(peers: Sequence[tuple[str, Any]]) -> tuple[list[tuple[str, BurnInResult]], list[str]]:
    """Parse the peers' documents; one that is malformed or unfinished is left out with a
    finding (a peer's bad document must not crash, nor decide, this node's verdict)."""
    ok, findings = [], []
    for name, doc in peers:
        if isinstance(doc, BaseException):  # the fetcher could not read it (cut evidence, ...)
            findings.append(f"peer {name}: its burn-in document cannot be read ({doc}); not used")
            continue
        try:
            result = doc if isinstance(doc, BurnInResult) else parse_result(doc, source=f"{name} burn-in document")
        except (BringupError, AttributeError, TypeError, KeyError, ValueError) as exc:
            findings.append(f"peer {name}: its burn-in document cannot be read ({exc}); not used")
            continue
        if result.partial:
            findings.append(f"peer {name}: its burn-in did not finish; not used")
            continue
        ok.append((name, result))
    return ok, findings


def _describe(group: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in group.items()) or "the SKU"


def _against_peers(name: str, fig: Figure, mine: float | None, values: list[float], policy: PeerPolicy,
                   group: Mapping[str, Any]) -> FigureCheck:
    base = {"figure": name, "against": "peers", "check": fig.check, "peers": len(values), "value": mine}
    if mine is None:
        return FigureCheck(**base, outcome="skipped", message=f"{name}: this node did not report {fig.metric}")
    if len(values) < policy.min_peers:
        return FigureCheck(**base, outcome="skipped",
                           message=f"{name}: {len(values)} peers, {policy.min_peers} needed ({_describe(group)})")
    median = statistics.median(values)
    spread = MAD_SCALE * statistics.median(abs(x - median) for x in values)
    k = fig.k if fig.k is not None else policy.k
    share = fig.min_relative if fig.min_relative is not None else policy.min_relative
    off = abs(mine - median)
    rel = off / abs(median) if median else math.inf if off else 0.0
    bad = WORSE[fig.worse](mine, median) and off > k * spread and rel > share
    how = f"{rel:.1%} {SIDE[fig.worse] if WORSE[fig.worse](mine, median) else 'off'}"
    msg = (f"{name} {mine:g} {fig.unit} is {how} the median {median:g} of {len(values)} peers "
           f"(scaled MAD {spread:.3g}; outlier beyond {k:g} MADs and {share:.0%})").replace("  ", " ")
    return FigureCheck(**base, outcome="outlier" if bad else "ok", message=msg, reference=median, spread=spread,
                       action=fig.action if bad else None,
                       code=f"{name}_{SIDE[fig.worse]}_peers" if bad else None)


def _against_baseline(name: str, fig: Figure, mine: float | None, before: Any, policy: PeerPolicy) -> FigureCheck:
    base = {"figure": name, "against": "baseline", "check": fig.check, "value": mine}
    if mine is None:
        return FigureCheck(**base, outcome="skipped", message=f"{name}: this node did not report {fig.metric}")
    if isinstance(before, bool) or not isinstance(before, int | float) or not math.isfinite(before):
        return FigureCheck(**base, outcome="skipped",
                           message=f"{name}: no accepted burn-in of this node on record to compare with")
    before = float(before)
    change = (mine - before) / abs(before) if before else (math.inf if mine != before else 0.0)
    worse = WORSE[fig.worse](mine, before)
    limit = policy.baseline.max_change
    bad = worse and abs(change) > limit
    msg = (f"{name} {mine:g} {fig.unit} is {abs(change):.1%} {SIDE[fig.worse] if worse else 'off'} this node's last "
           f"accepted burn-in ({before:g}; outlier beyond {limit:.0%})").replace("  ", " ")
    return FigureCheck(**base, outcome="outlier" if bad else "ok", message=msg, reference=before,
                       action=policy.baseline.action if bad else None,
                       code=f"{name}_{SIDE[fig.worse]}_baseline" if bad else None)


def compare(result: BurnInResult, policy: PeerPolicy, peers: Sequence[tuple[str, Any]] | None = None,
            baseline: Mapping[str, Any] | None = None) -> PeerReport:
    """Each figure of ``result`` against ``peers`` (``(name, document)`` of other nodes of its
    SKU: raw JSON, a parsed result, or the exception that stopped its reading) and against
    ``baseline`` (figure -> value of its last accepted burn-in; ``{}`` when there is none).
    ``None`` leaves that comparison out (nothing was asked, e.g. a replay of one document)."""
    report = PeerReport(group=group_of(result, policy))
    if peers is not None:
        usable, report.findings = _usable(peers)
        same = [(n, r) for n, r in usable if group_of(r, policy) == report.group]
        for name, fig in policy.figures.items():
            values = []
            for _, r in same:
                c = r.check(fig.check)
                v = figure_value(r, fig)
                # a peer whose own check did not pass is no reference for a healthy node
                if c is not None and c.status == "pass" and v is not None:
                    values.append(v)
            report.checks.append(_against_peers(name, fig, figure_value(result, fig), values, policy, report.group))
    if baseline is not None:
        for name, fig in policy.figures.items():
            report.checks.append(_against_baseline(name, fig, figure_value(result, fig), baseline.get(name), policy))
    return report
