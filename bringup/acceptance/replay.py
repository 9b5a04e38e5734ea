"""Judge a recorded tool output: the replay behind ``bringup parse``.

An operator (or a test) hands over what ``all_reduce_perf``, ``dcgmi diag -j``,
``gpu_burn`` or ``ibstat`` printed on some node, and gets back what the burn-in agent
would conclude from it: the agent's own parsers and assessments (``burnin.parsers``), the
limits of ``bringup/data/thresholds.yaml``, and with a SKU its expectations (bandwidth gate,
GPU count, InfiniBand ports and rate). Pure: text in, :class:`Replay` out.

``ok`` is True only when the output alone shows a healthy run: any ``fail`` or ``error``
finding makes it False, and so does a figure that could not be judged. A run that failed
(a ``Test NCCL failure`` line, the launcher's report of a rank's bad exit), stopped before
its summary, or an ``ibstat`` that found no device is understood: ``ok`` False with the
reason. An output that holds no result at all raises :class:`~bringup.errors.ParseError`
naming what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from bringup.acceptance.thresholds import SkuThresholds, load_thresholds_file, thresholds_for
from bringup.errors import ParseError
from bringup.sku import SkuSpec
from burnin.parsers import UnparseableOutput, dcgm, gpuburn, ibstat, nccl

TOOLS: tuple[str, ...] = ("nccl", "dcgm", "gpu-burn", "ibstat")


class ReplayFinding(BaseModel):
    severity: Literal["fail", "error", "info"]
    check: str
    message: str


class Replay(BaseModel):
    tool: str
    ok: bool
    findings: list[ReplayFinding]
    figures: dict[str, Any]


def _findings(raw: list[dict[str, Any]]) -> list[ReplayFinding]:
    return [ReplayFinding(severity=f["severity"], check=str(f["code"]), message=str(f["message"])) for f in raw]


def _values(sku: SkuSpec | None) -> tuple[dict[str, Any], SkuThresholds | None]:
    """Threshold values: the SKU's (defaults merged with it) or the file's defaults."""
    if sku is not None:
        th = thresholds_for(sku)
        return th.values, th
    return dict(load_thresholds_file().defaults), None


def _nccl(text: str, sku: SkuSpec | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    # a run that failed before its first row is understood: a failed run, not garbage
    parsed = nccl.parse_nccl_run(text)
    values, th = _values(sku)
    k = int(values.get("busbw_largest_sizes", 2))
    # a run that died or was cut is judged by that alone: its rows measure no bandwidth
    done = nccl.finished(parsed)
    busbw = nccl.busbw_at_largest(parsed, k) if done else None
    limits = values.get("nccl_error_limits") or {}
    err = nccl.error_figures(parsed, limits)
    found = nccl.assess(parsed, limits)
    gate = values.get("min_busbw_gbps") if th is not None else None
    if busbw is None:
        pass  # no row, or a run that did not finish: its failure or cut is the finding
    elif gate is not None and busbw < float(gate):
        found.append({"code": "busbw_low", "severity": "fail",
                      "message": f"busbw {busbw:.2f} GB/s at the {k} largest sizes, below the {th.sku} gate "
                                 f"{float(gate):g} GB/s"})
    elif gate is None:
        found.append({"code": "busbw_unjudged", "severity": "info",
                      "message": f"busbw {busbw:.2f} GB/s at the {k} largest sizes (give --sku to judge it)"})
    figures = {"busbw_gbps": busbw, "rows": len(parsed["rows"]), "wrong": nccl.wrong_total(parsed),
               "oob_values": parsed["oob_values"], "error_max": err["max"], "validated": parsed["validated"],
               "layout": parsed["layout"], "avg_busbw": parsed["avg_busbw"],
               "busbw_sizes": nccl.largest_sizes(parsed, k) if done else [], "complete": parsed["complete"],
               "failures": parsed["failures"][:10] + parsed["launcher_failures"][:10]}
    return found, figures


def _gpu_burn(text: str, sku: SkuSpec | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    parsed = gpuburn.parse_gpu_burn(text)
    found = gpuburn.assess(parsed, sku.gpu.count if sku is not None else None)
    faulty = sorted({int(f["gpu"]) for f in found if f["severity"] == "fail" and f.get("gpu") is not None})
    gpus = parsed["tested"] if parsed["tested"] is not None else len(parsed["procd"])  # type: ignore[arg-type]
    figures = {"gpus": gpus, "faulty": faulty, "procd": parsed["procd"], "gflops": parsed["gflops"],
               "finished": parsed["finished"]}
    return found, figures


def _dcgm(text: str, sku: SkuSpec | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    parsed = dcgm.parse_dcgm_diag(text)
    # tests the SKU requires are per profile (DCGM run level), which a recorded output does
    # not say: only a plain list in thresholds.yaml applies here
    values, _ = _values(sku)
    required = values.get("dcgm_required_tests")
    found = dcgm.assess(parsed, required if isinstance(required, list) and sku is not None else None)
    failed = []
    for t in parsed["tests"]:  # type: ignore[union-attr]
        if t["status"] in ("fail", "warn"):
            for key in dcgm.failing_gpus(t):
                failed.append({"test": t["name"], "gpu": int(key) if key.isdigit() else key})
    figures = {"failed": failed, "tests": len(parsed["tests"]), "version": parsed["version"],  # type: ignore[arg-type]
               "format": parsed["format"],
               "skipped": [t["name"] for t in parsed["tests"] if t["status"] == "skip"]}  # type: ignore[union-attr]
    return found, figures


def _ibstat(text: str, sku: SkuSpec | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    parsed = ibstat.parse_ibstat(text)
    found = ibstat.assess(parsed, sku.nics.compute if sku is not None else None,
                          sku.nics.compute_speed_gbps if sku is not None else None)
    ports = [{k: p[k] for k in ("ca", "port", "state", "rate_gbps", "link_layer")}
             for p in parsed["ports"]]  # type: ignore[union-attr]
    return found, {"ports": ports}


_REPLAYERS: dict[str, Callable[[str, SkuSpec | None], tuple[list[dict[str, Any]], dict[str, Any]]]] = {
    "nccl": _nccl, "gpu-burn": _gpu_burn, "dcgm": _dcgm, "ibstat": _ibstat,
}


def replay(tool: str, text: str, sku: SkuSpec | None = None, source: str = "") -> Replay:
    """Judge ``text``, the recorded output of ``tool``. Raises :class:`ParseError` when the
    output holds no result (the message names what was expected)."""
    if tool not in _REPLAYERS:
        raise ValueError(f"unknown tool {tool!r}; one of {', '.join(TOOLS)}")
    try:
        raw, figures = _REPLAYERS[tool](text, sku)
    except UnparseableOutput as exc:
        raise ParseError(f"no {tool} result: {exc}", source=source,
                         hint="pass the tool's full output (stdout), as it printed it") from None
    findings = _findings(raw)
    ok = not any(f.severity in ("fail", "error") for f in findings)
    return Replay(tool=tool, ok=ok, findings=findings, figures=figures)
