"""What the flows run against: the lifecycle (and its selection), built from the run's
settings file.

Every flow takes a ``config`` parameter (the settings file; None: ``$BRINGUP_CONFIG``,
which the lab's workers and the ``bringup`` command line set) and hands it to every task,
so all tasks of a run talk to the same site (``bringup commission --config FILE`` used to
reach the progress display only). Flows know no default settings file of their own.

A benchmark or test hands the flows another implementation *as an object* with
:func:`use`: anything with every method of :class:`Runtime`. The flows call each method
directly; a runtime without one of these things (the bench has no cluster, no guard, no
report) implements the method and says so in what it returns.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bringup.lifecycle.engine import Lifecycle

if TYPE_CHECKING:
    from bringup.service.blastradius import Decision, Request
    from bringup.service.reconcile import Row, Target
    from bringup.service.watch_step import Look


class Runtime(Protocol):
    """Everything the flows ask of the system they run against."""

    def lifecycle(self) -> Lifecycle:
        """The lifecycle engine the walks drive (its steps and node records)."""
        ...

    def select(self, **selection: Any) -> list:
        """The nodes a run's selection (site, rack, tag, names) names."""
        ...

    def due_for_reburnin(self, **selection: Any) -> list:
        """The selected active nodes whose scheduled re-burn-in is due."""
        ...

    def fabric_test(self, names: list[str], *, mode: str = "rack") -> tuple[dict, list]:
        """The pools' fabric test of ``names``: each node's document and the pair rows."""
        ...

    def reconcile(self, targets: list[Target] | None = None, **selection: Any) -> list[Row]:
        """Kubernetes made to agree with NetBox for ``targets`` (None: the nodes
        ``selection`` reads); one row per node out of service, [] when none is."""
        ...

    def watch(self, name: str) -> Look:
        """One health-watch look at active node ``name``."""
        ...

    def quarantine_gpus(self, name: str, look: Look) -> str:
        """Take the GPUs ``look`` found bad out of service (the node keeps serving on the
        others); what was done, in words."""
        ...

    def report_fault(self, name: str, look: Look) -> str:
        """NVSentinel owns the nodes' health: report ``look``'s critical findings to it (an
        ExternalFault) instead of acting; what was done, in words."""
        ...

    def handoff_requests(self) -> list:
        """NVSentinel's ExternalRemediationRequests, read ([] unless NVSentinel is the
        site's health owner)."""
        ...

    def handoff(self, req: Any) -> dict:
        """One pass on an open request (the caller holds its node's lease): its table row."""
        ...

    def guard(self, requests: list[Request]) -> list[Decision]:
        """The blast-radius guard's decision on each request to take a node out of
        service (refusals already journaled)."""
        ...

    def report(self, name: str) -> Path | None:
        """Write the site's fleet report as ``name``; its page, or None when this runtime
        makes no report."""
        ...

    def accepts_after_admission(self) -> bool:
        """Whether a pool that gains nodes runs its acceptance job at the end of the run
        (the site names its acceptance storage)."""
        ...


class SiteRuntime:
    """The real thing: NetBox, BMCs, nodes and the cluster named by one settings file."""

    def __init__(self, config: str | None = None) -> None:
        from bringup.context import Context
        self.ctx = Context.from_settings(config)
        self._lifecycle: Lifecycle | None = None
        self._build = threading.Lock()

    def lifecycle(self) -> Lifecycle:
        """The one lifecycle of this runtime. Built under a lock: walks start side by side
        on threads, and two engines would each keep half of the run's leases (a walk whose
        steps asked the other engine read the node in full each step, and that engine's
        fence knew nothing of the lease's renewals)."""
        with self._build:
            if self._lifecycle is None:
                from bringup.pipeline import lifecycle
                self._lifecycle = lifecycle(self.ctx)
            return self._lifecycle

    def select(self, **selection: Any) -> list:
        from bringup.pipeline import select
        return select(self.ctx, **selection)

    def accepts_after_admission(self) -> bool:
        return bool(self.ctx.settings.acceptance_data)

    def due_for_reburnin(self, **selection: Any) -> list:
        from bringup.pipeline import due_for_reburnin
        return due_for_reburnin(self.ctx, **selection)

    def reconcile(self, targets: list[Target] | None = None, **selection: Any) -> list[Row]:
        """Kubernetes made to agree with NetBox for ``targets`` (or the nodes ``selection``
        reads from NetBox); see flows.reconcile."""
        from bringup.pipeline import reconcile_fleet, reconcile_targets
        if targets is None:
            return reconcile_fleet(self.ctx, **selection)
        return reconcile_targets(self.ctx, targets)

    def watch(self, name: str) -> Look:
        """One health-watch look at node ``name`` (see flows.healthwatch)."""
        from bringup.acceptance.thresholds import load_thresholds_file
        from bringup.service.health import load_policy
        from bringup.service.watch_step import look
        (rec,) = self.ctx.netbox.nodes(names=[name])   # a look compares no MACs
        return look(self.ctx, rec, load_policy(), load_thresholds_file().fatal_xids)

    def quarantine_gpus(self, name: str, look: Look) -> str:
        """One GPU's fault: the GPU out of service, the node serving on (see flows.healthwatch)."""
        from bringup.service.gpu_quarantine import quarantine
        (rec,) = self.ctx.netbox.nodes(names=[name])
        return quarantine(self.ctx, rec, look.gpus, serials=look.gpu_serials)

    def report_fault(self, name: str, look: Look) -> str:
        """NVSentinel owns the nodes' health: the look's findings as an ExternalFault (see flows.healthwatch)."""
        from bringup.service.handoff_step import report_fault
        from bringup.service.health import critical
        (rec,) = self.ctx.netbox.nodes(names=[name])
        return report_fault(self.ctx, rec, critical(look.signals))

    def handoff_requests(self) -> list:
        """NVSentinel's requests (see flows.handoff); none unless the settings make
        NVSentinel the health owner."""
        from bringup.kube.remediation import requests
        if self.ctx.settings.health_owner != "nvsentinel":
            return []
        return requests(self.ctx.kube)

    def handoff(self, req: Any) -> dict:
        from bringup.service.handoff_step import take
        return take(self.ctx, self.lifecycle(), req)

    def guard(self, requests: list[Request]) -> list[Decision]:
        """The blast-radius guard's decisions on taking ``requests``' nodes out of service,
        with refusals journaled in NetBox (see flows.guarded)."""
        from bringup.service.guard import ask, record_refusals
        decisions = ask(self.ctx, requests)
        record_refusals(self.ctx, decisions)
        return decisions

    def fabric_test(self, names: list[str], *, mode: str = "rack") -> tuple[dict, list]:
        """The pools' fabric test of ``names``: each node's result document and the pair
        matrix rows (bringup.fabric.fabric_step.pool_test)."""
        from bringup.fabric.fabric_step import pool_test
        return pool_test(self.ctx, names, mode=mode)

    def report(self, name: str) -> Path:
        """The fleet report of this settings' site, written under ``<state dir>/reports/NAME``;
        returns the page's path (see flows.artifacts.publish_report)."""
        from bringup.insight.fleetreport import write_site
        from bringup.settings import state_dir
        s = self.ctx.settings
        return write_site(self.ctx.netbox, s.site, state_dir() / "reports" / name, gpu_hour_usd=s.gpu_hour_usd)


_lock = threading.Lock()
_runtimes: dict[str | None, Runtime] = {}
_override: Runtime | None = None


def use(runtime: Runtime | None) -> None:
    """Run every flow of this process against ``runtime`` (None: back to the real one)."""
    global _override
    with _lock:
        _override = runtime


def get(config: str | None = None) -> Runtime:
    """The runtime of a run with settings file ``config``; built once per file."""
    with _lock:
        if _override is not None:
            return _override
        rt = _runtimes.get(config)
        if rt is None:
            rt = _runtimes[config] = SiteRuntime(config)
        return rt


def forget() -> None:
    """Drop cached runtimes (tests that rewrite a settings file between runs)."""
    with _lock:
        _runtimes.clear()
