"""What the flows run against: the lifecycle (and its selection), built from the run's
settings file.

Every flow takes a ``config`` parameter (the settings file; None: ``$BRINGUP_CONFIG`` or
the lab's) and hands it to every task, so all tasks of a run talk to the same site
(``bringup commission --config FILE`` used to reach the progress display only).

A benchmark or test hands the flows another implementation *as an object* with
:func:`use`: anything with the methods of :class:`Runtime`.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from bringup.lifecycle.engine import Lifecycle


class Runtime(Protocol):
    def lifecycle(self) -> Lifecycle: ...
    def select(self, **selection: Any) -> list: ...
    def due_for_reburnin(self, **selection: Any) -> list: ...
    def fabric_test(self, names: list[str], *, mode: str = "rack") -> tuple[dict, list]: ...


class SiteRuntime:
    """The real thing: NetBox, BMCs, nodes and the cluster named by one settings file."""

    def __init__(self, config: str | None = None) -> None:
        from bringup.context import Context
        self.ctx = Context.from_settings(config)
        self._lifecycle: Lifecycle | None = None

    def lifecycle(self) -> Lifecycle:
        if self._lifecycle is None:
            from bringup.pipeline import lifecycle
            self._lifecycle = lifecycle(self.ctx)
        return self._lifecycle

    def select(self, **selection: Any) -> list:
        from bringup.pipeline import select
        return select(self.ctx, **selection)

    def due_for_reburnin(self, **selection: Any) -> list:
        from bringup.pipeline import due_for_reburnin
        return due_for_reburnin(self.ctx, **selection)

    def reconcile(self, targets: list | None = None, **selection: Any) -> list:
        """Kubernetes made to agree with NetBox for ``targets`` (or the nodes ``selection``
        reads from NetBox); optional in a runtime (see flows.reconcile)."""
        from bringup.pipeline import reconcile_fleet, reconcile_targets
        if targets is None:
            return reconcile_fleet(self.ctx, **selection)
        return reconcile_targets(self.ctx, targets)

    def watch(self, name: str) -> Any:
        """One health-watch look at node ``name`` (see flows.healthwatch)."""
        from bringup.acceptance.thresholds import load_thresholds_file
        from bringup.service.health import load_policy
        from bringup.service.watch_step import look
        (rec,) = self.ctx.netbox.nodes(names=[name])
        return look(self.ctx, rec, load_policy(), load_thresholds_file().fatal_xids)

    def guard(self, requests: list) -> list:
        """The blast-radius guard's decisions on taking ``requests``' nodes out of service,
        with refusals journaled in NetBox (optional in a runtime: see flows.guarded)."""
        from bringup.service.guard import ask, record_refusals
        decisions = ask(self.ctx, requests)
        record_refusals(self.ctx, decisions)
        return decisions

    def fabric_test(self, names: list[str], *, mode: str = "rack") -> tuple[dict, list]:
        """The pools' fabric test of ``names``: each node's result document and the pair
        matrix rows (bringup.fabric.fabric_step.pool_test)."""
        from bringup.fabric.fabric_step import pool_test
        return pool_test(self.ctx, names, mode=mode)

    def report(self, name: str) -> Any:
        """The fleet report of this settings' site, written under ``<state dir>/reports/NAME``;
        returns the page's path (optional in a runtime: see flows.artifacts.publish_report)."""
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
