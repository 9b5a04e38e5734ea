"""The TaskService: following what a BMC does asynchronously (Redfish Tasks, Dell Jobs) to the end.

A ``Location`` may name a task *monitor* (202 while running, then the operation's
result) or the Task resource itself, which answers **200** with ``TaskState`` Running
(or ``Pending``, before it starts) while it runs (DMTF/Redfish-Service-Validator #384):
the state decides, never the status code. Dell's iDRAC answers a settings PATCH with a
Job (``/redfish/v1/Managers/iDRAC.Embedded.1/Jobs/JID_...``) whose ``JobState`` moves
Scheduled -> Running -> Completed | Failed (tests/fixtures/redfish/dell-openmanage-docs).
Every wait is bounded (:func:`bringup.retry.poll`) and paced as the BMC's ``Retry-After`` asks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bringup.errors import RedfishTaskError, RedfishTimeoutError
from bringup.redfish.models import TaskDoc, parse
from bringup.redfish.responses import messages, raise_for_response
from bringup.redfish.session import Reply, Session, now, pause
from bringup.retry import Backoff, Timeout, poll

#: Redfish TaskState values after which nothing more happens
TASK_DONE = {"completed"}
TASK_FAILED = {"exception", "killed", "cancelled"}
#: DellJob JobState values after which nothing more happens
JOB_DONE = {"completed", "completedwitherrors"}
JOB_FAILED = {"failed", "rebootfailed"}
#: a Dell job that waits for the host to reset (and will wait forever if it does not)
JOB_WAITING_FOR_RESET = {"scheduled", "new", "readyforexecution", "waiting", "rebootpending"}


@dataclass
class Outcome:
    uri: str
    state: str                     # the final TaskState / JobState, or "Completed" for a plain answer
    messages: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.state.lower() in TASK_FAILED | JOB_FAILED


def state_of(doc: object, uri: str) -> tuple[str | None, list[str]]:
    """(TaskState or JobState, messages) of a task/job document; (None, []) for anything else."""
    if not isinstance(doc, dict) or not ({"TaskState", "JobState"} & set(doc)):
        return None, []
    task = parse(TaskDoc, doc, uri)
    msgs = [task.Message] if task.Message else []
    msgs += [str(m.get("Message") or m.get("MessageId") or "") for m in task.Messages or []]
    return task.TaskState or task.JobState, [m for m in msgs if m]


def settled(state: str | None, *, reset_pending: bool = False) -> bool:
    if state is None:
        return True
    s = state.lower()
    if s in TASK_DONE | TASK_FAILED | JOB_DONE | JOB_FAILED:
        return True
    return reset_pending and s in JOB_WAITING_FOR_RESET


@dataclass(frozen=True)
class RetryAfter(Backoff):
    """Pauses of ``first`` seconds, or what the BMC's last ``Retry-After`` asked, kept
    between 0.1 s and ``cap`` (a BMC asking for minutes is asked again sooner)."""

    asked: list[float] = field(default_factory=list)

    def heard(self, reply: Reply) -> None:
        try:
            self.asked.append(float(reply.headers["retry-after"]))
        except (KeyError, ValueError):
            pass

    def pauses(self) -> Iterable[float]:
        while True:
            yield min(max(self.asked[-1] if self.asked else self.first, 0.1), self.cap)


def follow(session: Session, uri: str, what: str, timeout: float, *, poll_s: float = 1.0,
           until_scheduled: bool = False, raise_on_failure: bool = True) -> Outcome:
    """Poll ``uri`` until the task or job is over (or, with ``until_scheduled``, waits for a
    host reset); raise :class:`RedfishTaskError` when it failed (unless told not to) and
    :class:`RedfishTimeoutError` when ``timeout`` passes first."""
    pace = RetryAfter(first=poll_s, cap=2.0)

    def ask() -> Outcome | None:
        reply = session.call("GET", uri)
        pace.heard(reply)
        if reply.status == 202:    # a task monitor: still running
            return None
        raise_for_response(reply.status, reply.doc, "GET", uri, session.name)
        state, msgs = state_of(reply.doc, uri)
        if not settled(state, reset_pending=until_scheduled):
            return None
        return Outcome(uri=uri, state=state or "Completed", messages=msgs or messages(reply.doc))

    try:
        outcome = poll(ask, timeout=timeout, what=what, backoff=pace, sleep=pause, clock=now)
    except Timeout:
        raise RedfishTimeoutError(f"{session.name}: {what} still running after {timeout:g}s",
                                  hint=f"see the task at {uri}") from None
    if outcome.failed and raise_on_failure:
        detail = "; ".join(outcome.messages) or "no message"
        raise RedfishTaskError(f"{session.name}: {what} ended in state {outcome.state}: {detail}",
                               hint=f"see {uri} on the BMC")
    return outcome


def action(session: Session, path: str, body: dict[str, Any], what: str, timeout: float = 120.0) -> Reply:
    """POST an action (a Reset, InsertMedia...); one answered 202 with a monitor is followed to its end."""
    reply = session.request("POST", path, body=body)
    monitor = reply.headers.get("location")
    if reply.status == 202 and monitor:
        follow(session, monitor, what, timeout)
    return reply
