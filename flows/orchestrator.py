"""The Prefect server as a service the walk depends on: its failures as bringup's errors.

Everything a walk asks the server (concurrency slots, task and flow run states) travels
over httpx. Without this translation a server lost mid-run surfaced as a bare
``httpx.ConnectError`` out of a task: the node stopped where it was with no reason in
NetBox. Translated, a refused connection or a 5xx is :class:`OrchestratorUnavailable`
(transient, the controller's fault): the step's retries wait it out, and a node still
cut off afterwards is held with "Prefect server unreachable" as its reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx

from bringup.errors import OrchestratorError, OrchestratorUnavailable
from bringup.retry import Backoff, retry

#: how long one request keeps retrying a server that refuses connections or answers 5xx
#: (a server restart, a database failover) before the step gives up on it
OUTAGE_S = 120.0
#: pauses between those tries (0.1 s doubling up to 2 s, each cut by up to half at random so
#: many waiting tasks do not ask again in step)
OUTAGE_BACKOFF = Backoff(first=0.1, factor=2.0, cap=2.0, jitter=0.5)
#: no count of tries bounds an outage wait: its time does
UNBOUNDED = 1 << 30

def is_unavailable(exc: BaseException) -> bool:
    """A server that is down, unreachable, or answering 5xx: it may answer later."""
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)


def translated(exc: httpx.HTTPError, doing: str) -> OrchestratorError:
    """``exc`` as bringup's error, saying what the run was doing when it happened."""
    detail = str(exc) or type(exc).__name__
    if is_unavailable(exc):
        return OrchestratorUnavailable(f"{doing}: {detail}",
                                       hint="check that the Prefect server (PREFECT_API_URL) is up and reachable")
    return OrchestratorError(f"{doing}: {detail}", hint="check the Prefect deployment and settings")


@contextmanager
def talking_to_prefect(doing: str) -> Iterator[None]:
    """Any httpx error inside the block leaves it as bringup's error (see module doc)."""
    try:
        yield
    except httpx.HTTPError as exc:
        raise translated(exc, doing) from exc


def through_outage[T](call: Callable[[], T], doing: str, *, outage_s: float | None = None,
                   passes: Callable[[httpx.HTTPError], bool] = lambda exc: False, sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> T:
    """``call()``, tried again with backoff while the server is unavailable, for at most
    ``outage_s`` seconds (default :data:`OUTAGE_S`) since its first failure; then the
    last failure, translated. Any other error is translated at once, except those
    ``passes`` lets through untouched for the caller to handle (a 423 of a full limit)."""
    limit = OUTAGE_S if outage_s is None else outage_s
    first: list[float] = []   # when the first failure came: the outage is timed from it

    def stop(exc: BaseException) -> bool:
        if passes(exc) or not is_unavailable(exc):  # type: ignore[arg-type]
            return True
        now = clock()
        first[:] = first or [now]
        return now - first[0] >= limit
    try:
        return retry(call, attempts=UNBOUNDED, retry_on=(httpx.HTTPError,), give_up=stop, backoff=OUTAGE_BACKOFF,
                     sleep=sleep, clock=clock)
    except httpx.HTTPError as exc:
        if passes(exc):
            raise
        raise translated(exc, doing) from exc
