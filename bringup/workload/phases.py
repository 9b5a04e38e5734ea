"""The phase lines an acceptance job prints, parsed into figures (pure).

bringup's own format (``docs/pool-acceptance.md``), one line per finished phase, anywhere in
a container's log (a prefix such as ``[rank0]:`` is allowed)::

    bringup-accept phase=data seconds=1.20 bytes=52428800
    bringup-accept phase=weights seconds=0.40 bytes=1048576
    bringup-accept phase=comm busbw_gbps=182.5
    bringup-accept phase=train step=40 samples_per_s=812.3 loss=0.0123 mfu=0.41
    bringup-accept phase=checkpoint step=40 seconds=0.05 bytes=8192 path=/ckpt/step-40.npz
    bringup-accept phase=restore step=40 seconds=0.03
    bringup-accept phase=done steps=80 loss_first=1.93 loss_last=0.0081
    bringup-accept phase=restore status=failed reason="checkpoint step-40.npz unreadable: ..."

Figures are numbers; other values are text (double-quoted when they hold spaces).
``status=failed`` with a ``reason`` marks a phase that could not be done.

Real training programs print their own progress lines; where an image cannot be changed,
its train lines are read as they are: Megatron-LM's ``iteration N/ M | ... elapsed time per
iteration (ms): T | ... global batch size: B | lm loss: L`` (samples/s = B / T) and
torchtitan's ``step: N  loss: L ... tps: T  tflops: F  mfu: M%`` (tokens/s per device).
Samples in ``tests/fixtures/workload/``.

A line that names the marker but cannot be read is a finding about that line, never a
figure; a phase that never appears is absent (the verdict calls it unknown).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

MARKER = "bringup-accept"
#: each phase's keys that must be numbers, and those of them it must carry
PHASES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "data": (frozenset({"seconds", "bytes"}), frozenset({"seconds"})),
    "weights": (frozenset({"seconds", "bytes"}), frozenset({"seconds"})),
    "comm": (frozenset({"busbw_gbps", "seconds"}), frozenset({"busbw_gbps"})),
    "train": (frozenset({"step", "samples_per_s", "tokens_per_s", "loss", "mfu", "tflops"}), frozenset()),
    "checkpoint": (frozenset({"step", "seconds", "bytes"}), frozenset({"step"})),
    "restore": (frozenset({"step", "seconds"}), frozenset({"step"})),
    "done": (frozenset({"steps", "loss_first", "loss_last"}), frozenset({"loss_first", "loss_last"})),
}
_WORD = re.compile(r'(\w+)=("[^"]*"|\S+)')
_MEGATRON = re.compile(r"iteration\s+(\d+)/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*([\d.]+)"
                       r".*?global batch size:\s*(\d+)\s*\|\s*lm loss:\s*([\d.eE+-]+)")
_MEGATRON_TFLOPS = re.compile(r"throughput per GPU \(TFLOP/s/GPU\):\s*([\d.]+)")
_TITAN = re.compile(r"step:\s*(\d+)\s+loss:\s*([\d.]+).*?tps:\s*([\d,]+)\s+tflops:\s*([\d.]+)\s+mfu:\s*([\d.]+)%")


class Phase(BaseModel):
    """One phase line: its name, its figures, the line number in its log."""

    model_config = ConfigDict(frozen=True)
    name: str
    figures: dict[str, float] = Field(default_factory=dict)
    text: dict[str, str] = Field(default_factory=dict)
    line: int = 0


class PhaseLog(BaseModel):
    """Everything one container log said: its phases in order and the lines that named the
    marker (or looked like a train line) but could not be read."""

    phases: list[Phase] = Field(default_factory=list)
    findings: list[str] = Field(default_factory=list)

    def all(self, name: str) -> list[Phase]:
        return [p for p in self.phases if p.name == name]

    def last(self, name: str) -> Phase | None:
        found = self.all(name)
        return found[-1] if found else None

    def first(self, name: str) -> Phase | None:
        found = self.all(name)
        return found[0] if found else None


def _number(v: str) -> float | None:
    try:
        x = float(v.replace(",", ""))
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _ours(text: str, lineno: int) -> tuple[Phase | None, str | None]:
    words = {k: v[1:-1] if v.startswith('"') else v for k, v in _WORD.findall(text.split(MARKER, 1)[1])}
    name = words.pop("phase", "")
    if name not in PHASES:
        return None, f"line {lineno}: {MARKER} line with unknown phase {name!r}: {text.strip()[:200]}"
    numeric, required = PHASES[name]
    figures, texts, bad = {}, {}, []
    for key, value in words.items():
        if key in numeric:
            x = _number(value)
            if x is None:
                bad.append(f"{key}={value!r} is not a number")
            else:
                figures[key] = x
        else:
            texts[key] = value
    if texts.get("status") != "failed":  # a failed phase says why instead of its figures
        bad += [f"no {k}" for k in sorted(required - figures.keys()) if not any(b.startswith(k) for b in bad)]
    if bad:
        return None, f"line {lineno}: phase {name}: {'; '.join(bad)}"
    return Phase(name=name, figures=figures, text=texts, line=lineno), None


def _megatron(text: str, lineno: int) -> Phase | None:
    m = _MEGATRON.search(text)
    if not m:
        return None
    step, ms, batch, loss = int(m[1]), float(m[2]), int(m[3]), float(m[4])
    if ms <= 0:
        return None
    figures = {"step": step, "samples_per_s": batch / (ms / 1000.0), "loss": loss}
    if t := _MEGATRON_TFLOPS.search(text):
        figures["tflops"] = float(t[1])
    return Phase(name="train", figures=figures, text={"source": "megatron"}, line=lineno)


def _titan(text: str, lineno: int) -> Phase | None:
    m = _TITAN.search(text)
    if not m:
        return None
    return Phase(name="train", figures={"step": int(m[1]), "loss": float(m[2]),
                                        "tokens_per_s": float(m[3].replace(",", "")),
                                        "tflops": float(m[4]), "mfu": float(m[5]) / 100.0},
                 text={"source": "torchtitan"}, line=lineno)


def parse_log(lines: str | Iterable[str]) -> PhaseLog:
    """The phases of one container log (text or lines)."""
    out = PhaseLog()
    for lineno, text in enumerate(lines.splitlines() if isinstance(lines, str) else lines, 1):
        if MARKER in text:
            phase, finding = _ours(text, lineno)
            if finding:
                out.findings.append(finding)
        else:
            phase = _megatron(text, lineno) or _titan(text, lineno)
            if phase is None and ("iteration" in text and "elapsed time per iteration" in text):
                out.findings.append(f"line {lineno}: a Megatron-LM iteration line without the batch size "
                                    f"or loss: {text.strip()[:200]}")
        if phase is not None:
            out.phases.append(phase)
    return out


def format_line(name: str, **figures: float | int | str) -> str:
    """One phase line in bringup's format (what an image prints)."""
    words = [f"{k}={v:.6g}" if isinstance(v, float) else f'{k}="{v}"' if isinstance(v, str) and " " in v
             else f"{k}={v}" for k, v in figures.items()]
    return " ".join([MARKER, f"phase={name}", *words])


__all__ = ["MARKER", "PHASES", "Phase", "PhaseLog", "format_line", "parse_log"]
