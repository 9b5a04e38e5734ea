"""What a step's tries failed on, so a held node's reason keeps its own failure.

Prefect retries a step that failed on a transient error (flows.walk.RETRY) and keeps only
the last try's exception. A fresh-clone suite run (stop 39) held ``fs-r2-bmc500``, whose BMC
answers 500, with "cannot reach NetBox": its first tries failed on the BMC, its last one on
a NetBox slowed by the run's load, and the failure an operator fixes on the node was lost.
Each try that fails on the node's side is remembered here (per run, node and step); a later
try that fails on the controller's side is raised as :class:`AfterNodeFailure`, which names
both and otherwise is that controller error: as transient, and the run's to report.
"""

from __future__ import annotations

import threading

from bringup.errors import BringupError

_lock = threading.Lock()
#: (run's lease holder, node, step) -> the node-side error of its last failed try
_seen: dict[tuple[str, str, str], BringupError] = {}


class AfterNodeFailure(BringupError):
    """A step's try failed on the controller's side after an earlier try failed on the node's."""

    def __init__(self, node_error: BringupError, controller_error: BringupError) -> None:
        super().__init__(f"{node_error}; then, on a later try, on the controller's side: {controller_error}")
        self.node_error, self.controller_error = node_error, controller_error

    @property
    def transient(self) -> bool:
        return self.controller_error.transient

    @property
    def controller_fault(self) -> bool:
        return True


def failed(key: tuple[str, str, str], exc: BringupError) -> BringupError:
    """The error a step's try that raised ``exc`` raises: ``exc`` itself, or an
    :class:`AfterNodeFailure` when it is the controller's and an earlier try of the same
    run, node and step failed on the node's side."""
    with _lock:
        if not exc.controller_fault:
            _seen[key] = exc
            return exc
        earlier = _seen.get(key)
    return exc if earlier is None else AfterNodeFailure(earlier, exc)


def succeeded(key: tuple[str, str, str]) -> None:
    """The step's try went through: nothing of its earlier tries is kept."""
    with _lock:
        _seen.pop(key, None)


def forget(holder: str, node: str) -> None:
    """The walk of ``node`` under ``holder`` is over: nothing of its steps' tries is kept
    (a batch worker lives for many runs; a step whose tries ran out never succeeded)."""
    with _lock:
        for key in [k for k in _seen if k[:2] == (holder, node)]:
            del _seen[key]
