"""The digest of burn-in evidence: the figures fleet reports use, extracted once.

A burn-in document is tens of kilobytes to megabytes (every check's data and raw outputs); a
fleet report, the GPU-hours ledger and the metrics only need a few dozen numbers of each run.
So when the ``burn_in`` and ``judge`` steps record a document they also record its digest
beside it (:func:`bringup.netbox.evidence.digest_block`, in the document's first journal
entry, with the document's SHA-256), and :mod:`bringup.insight.fleetdata` reads digests
instead of reassembling and parsing every document. Evidence recorded before digests existed
is digested on read by the same functions, so old and new entries give the same rows.

- :func:`of_burnin`: run facts (profile, agent exit code, agent version, times, partial),
  every numeric check metric (``nccl.busbw_largest_gbps``), one row per GPU (serial,
  temperature, power, gpu-burn Gflop/s and status), and ``problems``: what could not be read,
  each ``[path in the stored record, message]`` (never a pass: the run has no figures).
- :func:`of_verdict`: status, reasons ``[check, code, blocking, message]``, key figures.

Pure. Digests read back from NetBox are external JSON: :func:`parse` validates them into the
models below, and one that does not validate is not used (the reader decodes its document).
"""

from __future__ import annotations

import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.acceptance.judge import Verdict, VerdictStatus
from bringup.acceptance.result import BurnInResult, parse_result
from bringup.errors import BringupError, ParseError
from bringup.netbox.evidence import digest_block

#: the shape of the digests below; a digest of another version is not used (its document is read)
VERSION = 1
#: the kinds of evidence that have a digest
KINDS = ("burnin", "verdict")

Num = int | float
#: gpu, serial, max_temp_c, max_power_w, gflops, burn_status
GpuRow = tuple[int, str | None, Num | None, Num | None, Num | None, str | None]
Problem = tuple[str, str]


class BurninDigest(BaseModel):
    """The digest of a stored burn-in record (``{"plan", "rc", "document"}``)."""

    model_config = ConfigDict(extra="forbid")
    v: Literal[1]
    profile: str | None = None
    rc: int | None = None
    agent_version: str | None = None
    started: str | None = None
    finished: str | None = None
    partial: bool | None = None
    #: every numeric check metric; None: the agent's document could not be parsed
    metrics: dict[str, Num] | None = None
    gpus: list[GpuRow] = Field(default_factory=list)
    problems: list[Problem] = Field(default_factory=list)


class VerdictDigest(BaseModel):
    """The digest of a verdict document; ``status`` None: the verdict could not be read."""

    model_config = ConfigDict(extra="forbid")
    v: Literal[1]
    status: VerdictStatus | None = None
    #: check, code, blocking, message
    reasons: list[tuple[str, str, str, str]] = Field(default_factory=list)
    figures: dict[str, Num | str | None] = Field(default_factory=dict)
    problems: list[Problem] = Field(default_factory=list)


def _num(v: Any) -> Num | None:
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def of_burnin(stored: Any) -> dict[str, Any]:
    """The digest of a stored burn-in record, as the ``burn_in`` step stores it."""
    out: dict[str, Any] = {"v": VERSION}
    if not isinstance(stored, dict) or "document" not in stored:
        out["problems"] = [("", "the burn-in evidence holds no agent document")]
        return out
    plan = stored.get("plan") if isinstance(stored.get("plan"), dict) else {}
    rc = stored.get("rc")
    out.update(profile=_str(plan.get("profile")), rc=rc if isinstance(rc, int) and not isinstance(rc, bool) else None)
    raw = stored["document"]
    if isinstance(raw, dict) and isinstance(raw.get("unparsed"), str):
        raw = raw["unparsed"]  # the node's file was not JSON: parse_result says where it breaks
    try:
        result = parse_result(raw, source="")
    except ParseError as exc:
        out["problems"] = [(".document" + exc.path.lstrip("$"), str(exc))]
        return out
    out.update(agent_version=result.agent_version, started=result.started, finished=result.finished,
               partial=result.partial, metrics=_metrics(result))
    try:
        out["gpus"] = _gpus(result)
    except (AttributeError, TypeError, ValueError) as exc:  # odd shapes the model lets through
        out["problems"] = [(".document", f"odd figures: {exc}")]
    return out


def _metrics(result: BurnInResult) -> dict[str, Num]:
    # checks in run order, a check's metrics by name: the order of a document read back from NetBox
    # names interned: a fleet read digests tens of thousands of runs with a few dozen names
    return {sys.intern(f"{c.name}.{m}"): c.metrics[m] for c in result.checks for m in sorted(c.metrics)
            if _num(c.metrics[m]) is not None}


def _gpus(result: BurnInResult) -> list[GpuRow]:
    clocks, burn = result.check("clocks"), result.check("gpu_burn")
    per: dict[int, dict[str, Any]] = {i: {"serial": _str(s)} for i, s in enumerate(result.serials())}
    for g in (clocks.data.get("gpus") if clocks else None) or []:
        if isinstance(g, dict) and isinstance(g.get("gpu"), int):
            per.setdefault(g["gpu"], {}).update(max_temp_c=_num(g.get("max_temp_c")),
                                                max_power_w=_num(g.get("max_power_w")))
    if burn is not None:
        gflops = burn.data.get("gflops") or []
        status = burn.data.get("gpus") or {}
        for i, v in enumerate(gflops if isinstance(gflops, list) else []):
            per.setdefault(i, {})["gflops"] = _num(v)
        for i, st in (status.items() if isinstance(status, dict) else []):
            if str(i).isdigit():
                per.setdefault(int(i), {})["burn_status"] = _str(st)
    return [(i, per[i].get("serial"), per[i].get("max_temp_c"), per[i].get("max_power_w"), per[i].get("gflops"),
             per[i].get("burn_status")) for i in sorted(per)]


def _json_path(loc: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def of_verdict(stored: Any) -> dict[str, Any]:
    """The digest of a verdict document, as the ``judge`` step stores it."""
    out: dict[str, Any] = {"v": VERSION}
    try:
        verdict = Verdict.model_validate(stored)
    except ValidationError as exc:
        first = exc.errors()[0]
        out["problems"] = [(_json_path(first["loc"]), first["msg"])]
        return out
    figures = stored.get("figures") if isinstance(stored.get("figures"), dict) else {}
    out.update(status=verdict.status, reasons=[(r.check, r.code, r.blocking, r.message) for r in verdict.reasons],
               figures={k: v for k, v in figures.items() if _num(v) is not None or isinstance(v, str)})
    return out


def of(kind: str, stored: Any) -> dict[str, Any]:
    """The digest of a ``kind`` document (one of :data:`KINDS`)."""
    return {"burnin": of_burnin, "verdict": of_verdict}[kind](stored)


def parse(kind: str, data: Any) -> BurninDigest | VerdictDigest:
    """A digest read back from NetBox (its JSON text, or already parsed), validated;
    :class:`ParseError` names the bad field. JSON text is parsed and validated in one pass
    (pydantic's own parser): a fleet report reads tens of thousands of digests."""
    model = BurninDigest if kind == "burnin" else VerdictDigest
    try:
        return model.model_validate_json(data) if isinstance(data, str) else model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ParseError(first["msg"], path="$" + _json_path(first["loc"])) from None


def with_digest(kind: str, document: Any, summary: str) -> str:
    """``summary`` (the markdown of the evidence's first journal entry) with the digest of
    ``document`` appended: what the steps record, so the digest travels with the document."""
    try:
        block = digest_block(kind, document, of(kind, document))
    except (BringupError, AttributeError, TypeError, ValueError):  # odd shapes: the document is the evidence
        return summary  # no digest: readers decode the document, as for evidence from before digests
    return summary.rstrip() + "\n\n" + block
