"""A timed stand-in runtime for the flows, to measure the orchestration alone.

The real lifecycle engine (:class:`bringup.lifecycle.engine.Lifecycle`, its table, transitions
and progress) runs unchanged; only the step functions and the node records are stand-ins:
each step sleeps its duration, and node records are JSON files in a folder, so the
controller and every worker process share them as they would share NetBox. The bench
hands an instance to the flows with ``flows.runtime.use(...)``.

It implements all of :class:`flows.runtime.Runtime`; what the bench does not simulate
(a cluster to reconcile, the blast-radius guard, the fleet report, the health watch) each
method says so explicitly rather than being absent.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from bringup.lifecycle.engine import STEP_NAMES, Lifecycle
from bringup.lifecycle.results import NodeReport, StepResult
from bringup.lifecycle.select import Selected
from bringup.netbox import lease as leases
from bringup.netbox.evidence import EvidenceStore, Ref
from bringup.service.blastradius import Decision, Request
from bringup.service.reconcile import Row, Target

#: the bench's guard allows every node; each decision says why
NO_GUARD = "no guard in the bench: every node allowed"


@dataclass
class SimNode:
    name: str
    rack: str
    stage: str = "planned"
    status: str = "planned"
    url: str = ""
    custom_fields: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)


def node_name(i: int, rack_size: int) -> tuple[str, str]:
    rack = f"r{i // rack_size:03d}"
    return f"sim-{rack}-n{i % rack_size:02d}", rack


class FileRecords(leases.LeaseOps):
    """Node records as one JSON file per node (written atomically). A node's lease is a
    field of its file like any other, its read-modify-writes serialised by one lock per
    process: the stand-in of NetBox's compare-and-swap, enough where each node is walked
    in one process (the bench's child runs take whole racks)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._lock = threading.Lock()

    def _path(self, name: str) -> Path:
        return self.home / "nodes" / f"{name}.json"

    def create(self, names: list[tuple[str, str]]) -> None:
        (self.home / "nodes").mkdir(parents=True, exist_ok=True)
        for name, rack in names:
            self._save(SimNode(name, rack))

    def _save(self, node: SimNode) -> None:
        path = self._path(node.name)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(node.__dict__))
        tmp.replace(path)

    def node(self, name: str) -> SimNode:
        return SimNode(**json.loads(self._path(name).read_text()))

    def node_list(self, names: list[str]) -> list[SimNode]:
        return [self.node(n) for n in names]

    def verdict_figures(self, nodes) -> dict[str, dict[str, Any]]:
        return {}   # the bench's judge records no figures

    def names(self) -> list[str]:
        return sorted(p.stem for p in (self.home / "nodes").glob("*.json"))

    def write(self, node, *, stage=None, status=None, fields=None, add_tags=(), remove_tags=()) -> None:
        with self._lock:  # a lease renewal may rewrite the same file meanwhile
            self._write(node, stage, status, fields, add_tags, remove_tags)

    def _write(self, node, stage, status, fields, add_tags, remove_tags) -> None:
        cur = self.node(node.name)
        cur.stage = stage or cur.stage
        cur.status = status or cur.status
        cur.custom_fields.update(fields or {})
        cur.tags = sorted((set(cur.tags) | set(add_tags)) - set(remove_tags))
        self._save(cur)
        node.stage, node.custom_fields = cur.stage, cur.custom_fields

    def refresh(self, node) -> Any:
        cur = self.node(node.name)
        node.stage, node.status, node.tags = cur.stage, cur.status, cur.tags
        node.custom_fields = cur.custom_fields
        return cur.custom_fields.get(leases.FIELD)

    def lease(self, node) -> Any:
        return self.node(node.name).custom_fields.get(leases.FIELD)

    def _cas(self, node, change):
        with self._lock:
            new, result = change(self.lease(node))
            if new is not leases.KEEP:
                self._write(node, None, None, {leases.FIELD: new}, (), ())
            return result

    def journal(self, node, text: str, kind: str = "info") -> None:
        pass  # the bench measures orchestration; NetBox's journal is not part of it

    def put_evidence(self, node, evidence) -> dict[str, Any]:
        return EvidenceStore.index_update(node.custom_fields, [Ref(e.kind, (0,), "", 0, "") for e in evidence])

    def report(self, node, verdict: str, figures=None) -> NodeReport:
        return NodeReport(node=node.name, rack=node.rack, verdict=verdict, stage=node.stage)


class SimRuntime:
    """``flows.runtime.Runtime`` over :class:`FileRecords` and sleeping steps. ``trace``
    (a folder) receives one JSON line per step: node, step, start, end."""

    def __init__(self, home: str, durations: dict[str, float], trace: str | None = None) -> None:
        self.home = Path(home)
        self.records = FileRecords(self.home)
        self.durations = durations
        self.trace = Path(trace) if trace else None
        self._lock = threading.Lock()
        self._lifecycle = Lifecycle(steps={name: partial(self._step, name) for name in STEP_NAMES},
                                    records=self.records)

    def lifecycle(self) -> Lifecycle:
        return self._lifecycle

    def _step(self, step: str, node, params) -> StepResult:
        start = time.time()
        time.sleep(self.durations.get(step, 0.0))
        if self.trace:
            line = json.dumps([node.name, step, start, time.time()]) + "\n"
            with self._lock, open(self.trace / f"trace-{os.getpid()}.jsonl", "a") as f:
                f.write(line)
        return StepResult(node=node.name, step=step, ok=True)

    def select(self, *, site=None, rack=None, tag=None, names=None, status=None) -> list[Selected]:
        out = []
        for name in names or self.records.names():
            n = self.records.node(name)
            if rack is None or n.rack == rack:
                out.append(Selected(n.name, n.rack, n.stage))
        return out

    def due_for_reburnin(self, **selection) -> list[Selected]:
        return []

    def fabric_test(self, names: list[str], *, mode: str = "rack") -> tuple[dict, list]:
        """The simulated pools' fabric test: it takes ``durations["fabric"]`` once for the
        whole run (the pairs of a pool run side by side) and every node passes."""
        time.sleep(self.durations.get("fabric_test", 0.0))
        docs = {n: {"verdict": "pass", "reasons": [], "links": [], "blamed": [], "pairs": []} for n in names}
        return docs, [{"pair": f"{len(names)} simulated nodes", "outcome": "pass"}]

    def reconcile(self, targets: list[Target] | None = None, **selection) -> list[Row]:
        """No cluster in the bench: no node is out of service in Kubernetes, so there is
        nothing to make agree ([] is what a site with every node in service returns)."""
        return []

    def guard(self, requests: list[Request]) -> list[Decision]:
        """No blast-radius guard in the bench: every request is allowed, and each decision
        says so (the bench measures orchestration, not the guard's policy)."""
        return [Decision(node=r.node, action=r.action, allowed=True, pool="", size=0, acted=0, limit=0,
                         window=timedelta(0), message=NO_GUARD, reason=r.reason) for r in requests]

    def report(self, name: str) -> Path | None:
        """No fleet report in the bench (its records are not NetBox): nothing to link."""
        return None

    def accepts_after_admission(self) -> bool:
        """The bench times the lifecycle's steps: no acceptance job after them."""
        return False

    def watch(self, name: str):
        """The bench does not simulate the health watch's looks at serving nodes."""
        raise NotImplementedError(f"no health watch in the bench: cannot look at {name}; "
                                  "run the healthwatch flow against the lab or a site")

    def quarantine_gpus(self, name: str, look) -> str:
        """No health watch in the bench, so no GPU a look found bad."""
        raise NotImplementedError(f"no health watch in the bench: no GPU of {name} to quarantine")

    def report_fault(self, name: str, look) -> str:
        """No health watch in the bench, so no finding to report to NVSentinel."""
        raise NotImplementedError(f"no health watch in the bench: no finding of {name} to report")

    def handoff_requests(self) -> list:
        """No cluster in the bench: NVSentinel hands nothing over."""
        return []

    def handoff(self, req) -> dict:
        raise NotImplementedError(f"no cluster in the bench: cannot take {req}")
