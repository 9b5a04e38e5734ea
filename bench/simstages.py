"""Timed stand-ins for :mod:`bringup.stages`, to measure the orchestration alone.

Selected with ``BRINGUP_STAGES=bench.simstages``; the fleet size, rack size and each
stage's duration come from ``BRINGUP_BENCH`` (JSON). Each stage sleeps its duration,
so the Prefect flow, task runner and global concurrency limits are the only real work.
"""

from __future__ import annotations

import json
import os
import threading
import time

from bringup.lifecycle import NodeReport, Outcome
from bringup.stages import Selected

CONFIG = json.loads(os.environ.get("BRINGUP_BENCH", "{}"))
NODES = int(CONFIG.get("nodes", 8))
RACK_SIZE = int(CONFIG.get("rack_size", 16))
DURATIONS: dict[str, float] = CONFIG.get("durations", {})
_stage: dict[str, str] = {}
_lock = threading.Lock()
#: (node, stage, start, end) in time.monotonic() seconds, for bench/commission.py --trace
TRACE: list[tuple[str, str, float, float]] = []


class Context:
    @classmethod
    def from_settings(cls, path=None) -> Context:
        return cls()


def _name(i: int) -> str:
    return f"sim-r{i // RACK_SIZE:02d}-n{i % RACK_SIZE:02d}"


def select(ctx, *, site=None, rack=None, tag=None, names=None, status=None) -> list[Selected]:
    out = []
    for i in range(NODES):
        name = _name(i)
        out.append(Selected(name, f"r{i // RACK_SIZE:02d}", _stage.get(name, "planned")))
    return out


def _step(stage: str, node: str, record_as: str | None = None) -> Outcome:
    start = time.monotonic()
    time.sleep(DURATIONS.get(stage, 0.0))
    with _lock:
        TRACE.append((node, stage, start, time.monotonic()))
        if record_as:
            _stage[node] = record_as
    return Outcome(node=node, stage=stage, ok=True)


def discover(ctx, name):
    return _step("discover", name, "discovered")


def apply_bios(ctx, name):
    return _step("bios", name)


def install_os(ctx, name):
    return _step("install", name)


def configure(ctx, name):
    return _step("configure", name, "provisioned")


def burn_in(ctx, name, profile="quick"):
    return _step("burnin", name, "burned_in")


def judge(ctx, name):
    return _step("judge", name, "judged")


def record(ctx, name):
    return _step("record", name, "recorded")


def admit(ctx, name):
    return _step("admit", name, "admitted")


def cordon_and_drain(ctx, name):
    return _step("drain", name)


def report(ctx, name) -> NodeReport:
    stage = _stage.get(name, "planned")
    return NodeReport(node=name, verdict="admitted" if stage == "admitted" else "pending", stage=stage)


def due_for_reburnin(ctx, **kw):
    return []
