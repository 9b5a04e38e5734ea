"""Prefect tasks, one per library stage function.

Retries are for transient errors only (timeouts, 5xx, dropped connections): a wrong MAC
or a failed burn-in never gets better by trying again. Global concurrency limits make
runs *queue* for OS installs, burn-ins per rack and BMC sessions instead of failing.
"""

from __future__ import annotations

import importlib
import os
from functools import lru_cache

from prefect import task
from prefect.cache_policies import NO_CACHE

from bringup.errors import BringupError
from bringup.lifecycle import NodeReport, Outcome

from .limits import BMC_LIMIT, INSTALL_LIMIT, burnin_limit, ensure_rack_limits, slot


def transient_only(task, task_run, state) -> bool:
    """Prefect retry condition: retry only errors our adapters marked transient."""
    try:
        state.result()
    except BringupError as exc:
        return bool(getattr(exc, "transient", False))
    except Exception:
        return False
    return False


#: the stage implementation; ``BRINGUP_STAGES`` may name another module with the same
#: functions (bench/commission.py swaps in timed stand-ins to measure orchestration alone)
stages = importlib.import_module(os.environ.get("BRINGUP_STAGES", "bringup.stages"))

#: every stage has side effects and reads live state: never serve it from a cache, and
#: keep results in memory (hashing inputs and persisting results per task run cost more
#: than the orchestration itself at a few hundred nodes)
PLAIN = dict(cache_policy=NO_CACHE, persist_result=False)
RETRY = dict(retries=3, retry_delay_seconds=[2, 10, 30], retry_condition_fn=transient_only, **PLAIN)


#: who gets a free BMC session first when several wait in this process: a node further
#: along (its install keeps the scarce install slot busy; its BIOS step feeds the
#: install queue) before a node that has not been discovered yet. Within a stage, the
#: ``order`` argument (the node's place in the run) decides.
PRIORITY = {"install": 3, "bios": 2, "discover": 1}


@lru_cache(maxsize=1)
def ctx():
    return stages.Context.from_settings()


@task(name="select nodes", **PLAIN)
def select(site: str | None, rack: str | None, tag: str | None, nodes: list[str] | None,
           status: str | None = None) -> list:
    selected = stages.select(ctx(), site=site, rack=rack, tag=tag, names=nodes, status=status)
    ensure_rack_limits([s.rack for s in selected])
    return selected


@task(name="discover", task_run_name="discover {node}", **RETRY)
def discover(node: str, order: int = 0) -> Outcome:
    with slot(BMC_LIMIT, priority=PRIORITY["discover"], order=order):
        return stages.discover(ctx(), node)


@task(name="bios", task_run_name="bios {node}", **RETRY)
def bios(node: str, order: int = 0) -> Outcome:
    with slot(BMC_LIMIT, priority=PRIORITY["bios"], order=order):
        return stages.apply_bios(ctx(), node)


@task(name="install os", task_run_name="install os {node}", **RETRY)
def install(node: str, order: int = 0) -> Outcome:
    with slot([INSTALL_LIMIT, BMC_LIMIT], priority=PRIORITY["install"], order=order):
        return stages.install_os(ctx(), node)


@task(name="configure", task_run_name="configure {node}", **RETRY)
def configure(node: str) -> Outcome:
    return stages.configure(ctx(), node)


@task(name="burn in", task_run_name="burn in {node}", **RETRY)
def burn_in(node: str, rack: str, profile: str, order: int = 0) -> Outcome:
    with slot(burnin_limit(rack), order=order):
        return stages.burn_in(ctx(), node, profile=profile)


@task(name="judge", task_run_name="judge {node}", **PLAIN)
def judge(node: str) -> Outcome:
    return stages.judge(ctx(), node)


@task(name="record", task_run_name="record {node}", **RETRY)
def record(node: str) -> Outcome:
    return stages.record(ctx(), node)


@task(name="admit", task_run_name="admit or quarantine {node}", **RETRY)
def admit(node: str) -> Outcome:
    return stages.admit(ctx(), node)


@task(name="cordon and drain", task_run_name="cordon and drain {node}", **RETRY)
def drain(node: str) -> Outcome:
    return stages.cordon_and_drain(ctx(), node)


def report(node: str) -> NodeReport:
    """The node's verdict as NetBox now records it. Not a Prefect task: it only reads,
    and a task run per node costs the server more than the read itself."""
    return stages.report(ctx(), node)
