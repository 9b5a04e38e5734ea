"""Run a plan: the checks in order, the stress phase under telemetry, one result document.

Each check runs in a worker thread with a deadline, so a check stuck in a driver call or a
tool is reported as an ``error`` and the run still finishes with a complete document.

The document is also handed to ``on_update`` before each check starts and after it ends
(``partial: true``, ``running`` naming the check under way, ``pending`` the rest), so a run
killed from outside (its time budget spent, the node lost) still leaves the evidence of
every finished check and names the step that did not finish.
"""

import itertools
import os
import platform
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from . import AGENT_VERSION, SCHEMA_VERSION
from .checks import REGISTRY, STRESS, CheckResult, Context
from .nvml import Nvml, NvmlFailure, Unsupported
from .telemetry import Sampler, XidWatcher

AFTER_STRESS = ("pcie", "clocks", "xid")
DEFAULT_CHECK_TIMEOUT_S = 3600.0


class PlanError(ValueError):
    """The plan is not something this agent can run."""


def validate_plan(plan: Any) -> list[str]:
    if not isinstance(plan, dict):
        raise PlanError("the plan is not a JSON object")
    if plan.get("schema_version") != SCHEMA_VERSION:
        raise PlanError(f"plan schema_version {plan.get('schema_version')!r} is not {SCHEMA_VERSION}")
    checks = plan.get("checks")
    if not isinstance(checks, list) or not checks or not all(isinstance(c, str) for c in checks):
        raise PlanError("plan.checks must be a non-empty list of check names")
    return checks


def _log(msg: str) -> None:
    print(f"burnin: {msg}", file=sys.stderr, flush=True)


def _execute(name: str, ctx: Context, timeout_s: float) -> CheckResult:
    result = CheckResult(name=name, started=time.time())
    cls = REGISTRY.get(name)
    if cls is None:
        return result.error("unknown_check", f"this agent ({AGENT_VERSION}) has no check named {name!r}")
    check = cls()
    if check.needs_gpu and not ctx.nvml.ok:
        return result.error("nvml_unavailable", f"NVML is not available: {ctx.nvml.error}")
    why = check.supported(ctx)
    if why:
        result.status = "unsupported"
        result.summary = why
        return result
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            check.run(ctx, result)
        except Unsupported as exc:
            result.status = "unsupported"
            result.summary = str(exc)
        except NvmlFailure as exc:
            result.error("nvml_error", str(exc))
        except Exception as exc:  # noqa: BLE001 - a buggy check must not sink the run
            box["tb"] = traceback.format_exc()
            result.error("check_crashed", f"{type(exc).__name__}: {exc}")
            result.evidence.append({"traceback_tail": box["tb"][-1500:]})

    t = threading.Thread(target=target, name=f"check-{name}", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        late = CheckResult(name=name, started=result.started)
        late.error("check_timeout", f"check {name} did not finish within {timeout_s:.0f} s")
        late.duration_s = time.time() - result.started
        return late
    result.duration_s = time.time() - result.started
    return result


def run_plan(plan: dict[str, Any], on_update: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    names = validate_plan(plan)
    started = time.time()
    wants_gpu = any(getattr(REGISTRY.get(n), "needs_gpu", False) for n in names)
    nvml = Nvml() if wants_gpu else _NoNvml()
    ctx = Context(plan, nvml)
    if nvml.ok:
        try:
            ctx.handles = nvml.handles()
        except (Unsupported, NvmlFailure) as exc:
            nvml.error = f"cannot enumerate GPUs: {exc}"
    durations = plan.get("durations") or {}
    timeouts = plan.get("check_timeouts_s") or {}
    order = [n for n in REGISTRY if n in names] + [n for n in names if n not in REGISTRY]
    before = [n for n in order if n not in STRESS and n not in AFTER_STRESS]
    stress = [n for n in order if n in STRESS]
    after = [n for n in order if n in AFTER_STRESS]
    sequence = before + stress + after
    sampler = None

    def snapshot(running: str | None = None, final: bool = False) -> dict[str, Any]:
        return _document(plan, ctx, nvml, order, sequence, started, running=running, final=final)

    def update(running: str | None = None) -> None:
        if on_update is not None:
            on_update(snapshot(running))

    def do(name: str) -> None:
        _log(f"running {name}")
        update(running=name)
        if sampler is not None:
            sampler.load = name if name in STRESS else None
        res = _execute(name, ctx, float(timeouts.get(name, DEFAULT_CHECK_TIMEOUT_S)))
        if sampler is not None:
            sampler.load = None
        ctx.results[name] = res
        _log(f"{name}: {res.status}")
        update()

    update()
    if "xid" in names and nvml.ok:
        ctx.xid_watcher = XidWatcher(nvml, ctx.handles, int(durations.get("xid_wait_ms", 200)))
        ctx.xid_watcher.start()
    for n in before:
        do(n)
    if nvml.ok and ctx.handles and ({"pcie", "clocks"} & set(names)):
        sampler = Sampler(nvml, ctx.handles, float(durations.get("sample_interval_s", 1.0)))
        sampler.start()
    for n in stress:
        do(n)
    if sampler is not None:
        if not stress:
            # nothing loaded the GPUs: still observe them for a while (these samples are
            # idle ones: the PCIe check does not judge link width/speed from them)
            time.sleep(float(durations.get("telemetry_s", 5.0)))
        sampler.stop()
        ctx.samples = sampler.samples
    if ctx.xid_watcher is not None:
        ctx.xid_watcher.stop()
    for n in after:
        do(n)
    doc = snapshot(final=True)
    nvml.shutdown()
    return doc


def _document(plan: dict[str, Any], ctx: Context, nvml: Any, order: list[str], sequence: list[str],
              started: float, *, running: str | None, final: bool) -> dict[str, Any]:
    """The result document as it stands: every finished check, and while the run is under
    way ``partial`` with the check ``running`` and those ``pending``."""
    checks = [ctx.results[n].to_dict() for n in order if n in ctx.results]
    statuses = [c["status"] for c in checks]
    pending = [n for n in sequence if n not in ctx.results and n != running]
    if any(s in ("fail", "error") for s in statuses):
        overall = "fail"
    elif final and all(s == "pass" for s in statuses):
        overall = "pass"
    else:
        overall = "incomplete"
    doc = {
        "schema_version": SCHEMA_VERSION,
        "agent_version": AGENT_VERSION,
        "node": {"name": plan.get("node", ""), "hostname": socket.gethostname(), "kernel": platform.release(),
                 "python": platform.python_version()},
        "started": _iso(started),
        "finished": _iso(time.time()) if final else "",
        "duration_s": round(time.time() - started, 3),
        "partial": not final,
        "running": running,
        "pending": [] if final else pending,
        "plan": plan,
        "nvml": {"available": nvml.ok, "error": nvml.error, "gpu_count": len(ctx.handles)},
        "checks": checks,
        "summary": {
            "status": overall,
            "failed": [c["name"] for c in checks if c["status"] in ("fail", "error")],
            "not_passed": [c["name"] for c in checks if c["status"] != "pass"],
        },
    }
    if not final:
        doc["summary"]["unfinished"] = running or (pending[0] if pending else None)
    return doc


class _NoNvml:
    """Stands in when no check needs a GPU: the agent then runs on hosts without a driver."""

    ok = False
    error = "not loaded: no GPU check in the plan"
    pynvml = None

    def shutdown(self) -> None:
        pass


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def exit_code(doc: dict[str, Any]) -> int:
    return {"pass": 0, "fail": 1, "incomplete": 3}.get(doc["summary"]["status"], 1)


_TMP_SEQ = itertools.count()


def write_atomic(path: str, text: str) -> None:
    """Write ``path`` whole or not at all: a reader (or a kill) never sees half a document.
    The temporary name is unique per write, so a signal handler writing while the main
    thread writes does not clobber its file."""
    tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}.{next(_TMP_SEQ)}"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
