"""The scale bench's runtime: the real site runtime (NetBox records, leases, journal,
evidence, selection) with only the hardware-facing step bodies replaced by timed stand-ins.

:class:`ScaleRuntime` is :class:`flows.runtime.SiteRuntime` over a settings file that names
the bench's NetBox; its lifecycle is built by :func:`bringup.pipeline.engine`, as the real
one is (NetBox records, the result spool, the site's lease cadence), but each step sleeps its duration and returns
what the real step records on a healthy node: the custom fields it sets and one evidence
document of the kind it keeps (a small one: the bench measures what the pipeline costs the
source of truth per request, not the size of a BMC's inventory). What needs hardware or a
cluster (the pool's fabric test, reconcile, the guard, the acceptance job) is a stand-in
that says what it does not do, as in :mod:`bench.simruntime`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from bringup.lifecycle.engine import STEP_NAMES, Lifecycle
from bringup.lifecycle.results import Evidence, StepResult
from bringup.pipeline import engine
from bringup.service.blastradius import Decision, Request
from bringup.service.reconcile import Row, Target
from flows.runtime import SiteRuntime

#: what each stand-in records on a healthy node: (evidence kind, custom fields)
RECORDS: dict[str, tuple[str, dict[str, Any]]] = {
    "discover": ("discovery", {"gpu_serials": None}),   # filled in per node below
    "firmware": ("firmware", {}),
    "bios": ("bios", {"bios_profile": "hgx-default"}),
    "install": ("install", {"image_id": "bench-image"}),
    "configure": ("configure", {"image_id": "bench-image", "driver_version": "570.124.06",
                                "cuda_version": "12.8", "nccl_version": "2.26.2"}),
    "burn_in": ("burnin", {}),
    "judge": ("verdict", {"burnin_status": "pass"}),   # burnin_last, burnin_summary per run
    "fabric": ("fabric", {}),
    "share": ("sharing", {}),
    "join": ("admission", {}),
    "gate": ("gate", {}),
    "drain": ("drain", {}),
}


class ScaleRuntime(SiteRuntime):
    """``flows.runtime.Runtime`` over the bench's NetBox (settings file ``config``) with
    timed stand-in steps; ``trace`` (a folder) receives one JSON line per step."""

    def __init__(self, config: str, durations: dict[str, float], trace: str | None = None) -> None:
        super().__init__(config)
        self.durations = durations
        self.trace = Path(trace) if trace else None
        self._lock = threading.Lock()

    def lifecycle(self) -> Lifecycle:
        with self._build:   # one engine, as SiteRuntime builds it
            if self._lifecycle is None:
                steps = {name: partial(self._step, name) for name in STEP_NAMES}
                self._lifecycle = engine(self.ctx, steps)
            return self._lifecycle

    def _step(self, step: str, node: Any, params: Any) -> StepResult:
        start = time.time()
        time.sleep(self.durations.get(step, 0.0))
        kind, fields = RECORDS[step]
        fields = dict(fields)
        if step == "discover":
            fields["gpu_serials"] = [f"{node.name}-gpu{i}" for i in range(8)]
        if step == "judge":
            fields.update(burnin_last=datetime.now(UTC).isoformat(timespec="seconds"),
                          burnin_summary=f"{node.name}: pass (bench stand-in)")
        doc = {"node": node.name, "step": step, "stand_in": True, "seconds": self.durations.get(step, 0.0)}
        if self.trace:
            line = json.dumps([node.name, step, start, time.time()]) + "\n"
            with self._lock, open(self.trace / f"trace-{os.getpid()}.jsonl", "a") as f:
                f.write(line)
        return StepResult(node=node.name, step=step, ok=True, summary=f"{step}: pass (bench stand-in)",
                          fields=fields, evidence=[Evidence(kind=kind, document=doc, style="success",
                                                            summary=f"{step} (bench stand-in)")])

    def fabric_test(self, names: list[str], *, mode: str = "rack") -> tuple[dict, list]:
        """The pools' fabric test: ``durations["fabric_test"]`` once for the share of the
        run (a pool's pairs run side by side), every node passing."""
        time.sleep(self.durations.get("fabric_test", 0.0))
        docs = {n: {"verdict": "pass", "reasons": [], "links": [], "blamed": [], "pairs": []} for n in names}
        return docs, [{"pair": f"{len(names)} bench nodes", "outcome": "pass"}]

    def reconcile(self, targets: list[Target] | None = None, **selection: Any) -> list[Row]:
        """No cluster in the bench: no node is out of service in Kubernetes ([] is what a
        site with every node in service returns)."""
        return []

    def guard(self, requests: list[Request]) -> list[Decision]:
        """No blast-radius guard in the bench: every request allowed, each decision says so."""
        return [Decision(node=r.node, action=r.action, allowed=True, pool="", size=0, acted=0, limit=0,
                         window=timedelta(0), message="no guard in the bench", reason=r.reason)
                for r in requests]

    def report(self, name: str) -> Path | None:
        """The bench measures the commission, not the fleet report (bench/report.py does)."""
        return None

    def accepts_after_admission(self) -> bool:
        """No acceptance job after the bench's admissions (it needs a cluster)."""
        return False
