"""When each worker of an xdist run did what: the suite's schedule, printed at its end.

The suite is CPU-bound on 2 cores and its fleet groups run for many minutes each on one
worker (``xdist_group``), so the wall time depends on when each group starts as much as
on what it costs: a long group started last leaves the other workers idle at the end.
The controller collects each test phase's start and stop (pytest's ``TestReport.start``/
``stop``, sent back by the worker) and prints, per worker, its spans: each fleet group
as one span and the ungrouped tests between them folded together, with their busy time.
``BRINGUP_TEST_TIMELINE=FILE`` also writes every phase as a JSON line.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Phase:
    """One phase (setup, call, teardown) of one test on one worker; times in seconds
    since the epoch."""

    worker: str
    nodeid: str
    when: str
    start: float
    stop: float


@dataclass(frozen=True)
class Span:
    """A worker's run of phases of one scope: a fleet group, or ungrouped tests."""

    worker: str
    scope: str
    start: float
    stop: float
    busy: float
    tests: int


def scope_of(nodeid: str) -> str:
    """The xdist group a test ran in (``...::test@group``), "" for an ungrouped test."""
    head, _, group = nodeid.rpartition("@")
    # xdist adds "@group" after the whole id: an "@" inside a parameter's brackets is not one
    return group if "::" in head and not any(c in group for c in "[]/:") else ""


def spans(phases: list[Phase]) -> list[Span]:
    """Each worker's phases, in order, cut where the scope changes; a worker's spans
    in order of start, workers by name."""
    out: list[Span] = []
    by_worker: dict[str, list[Phase]] = {}
    for p in sorted(phases, key=lambda p: (p.worker, p.start)):
        by_worker.setdefault(p.worker, []).append(p)
    for worker, ps in sorted(by_worker.items()):
        run: list[Phase] = []
        for p in ps:
            if run and scope_of(run[-1].nodeid) != scope_of(p.nodeid):
                out.append(_span(worker, run))
                run = []
            run.append(p)
        if run:
            out.append(_span(worker, run))
    return out


def _span(worker: str, run: list[Phase]) -> Span:
    return Span(worker=worker, scope=scope_of(run[0].nodeid) or "(ungrouped)", start=run[0].start,
                stop=max(p.stop for p in run), busy=sum(p.stop - p.start for p in run),
                tests=len({p.nodeid for p in run}))


def lines(phases: list[Phase], *, shortest_s: float = 30.0) -> list[str]:
    """The schedule as text: per worker its spans of at least ``shortest_s`` (offsets from
    the first phase's start), then when each worker ran its last test."""
    if not phases:
        return []
    t0 = min(p.start for p in phases)
    out = [f"{'worker':8s} {'from':>7s} {'to':>7s} {'busy':>7s} {'tests':>5s}  scope"]
    last: dict[str, float] = {}
    for s in spans(phases):
        last[s.worker] = max(last.get(s.worker, 0.0), s.stop - t0)
        if s.stop - s.start >= shortest_s:
            out.append(f"{s.worker:8s} {s.start - t0:7.0f} {s.stop - t0:7.0f} {s.busy:7.0f} {s.tests:5d}  {s.scope}")
    end = max(last.values())
    out.append("last test done: " + ", ".join(f"{w} at {t:.0f} s" for w, t in sorted(last.items()))
               + f" (each worker idle at the end for {', '.join(f'{end - t:.0f}' for _, t in sorted(last.items()))} s)")
    return out


def write(path: Path, phases: list[Phase]) -> None:
    path.write_text("".join(json.dumps(asdict(p)) + "\n" for p in phases), encoding="utf-8")


def read(path: Path) -> list[Phase]:
    return [Phase(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
