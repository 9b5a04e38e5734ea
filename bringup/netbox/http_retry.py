"""NetBox's one retry budget: what is sent again, when, and how long one call can take.

Two layers of bringup wait for NetBox, each with its numbers here and nowhere else:

=============  ==========================  ==================================================
layer          where                       budget
=============  ==========================  ==================================================
HTTP session   :func:`retry_policy`,       each try: connect :data:`CONNECT_TIMEOUT_S` (5 s),
               mounted by                  read :data:`READ_TIMEOUT_S` (30 s); sent again
               :func:`connect`             :data:`HTTP_RETRIES` (3) times, after the pauses
                                           :data:`HTTP_PAUSES_S` (0, 1, 2 s)
records        ``netbox.records``          a call that finds NetBox unreachable is made
               (``NetBoxRecords``)         again after the pauses :data:`OUTAGE_BACKOFF`
                                           (1, 2, 4, 8, 15, 15... s); no new try once
                                           :data:`OUTAGE_S` (120 s; settings
                                           ``netbox_outage_s``) has passed
=============  ==========================  ==================================================

Worst cases, from these numbers (:func:`call_worst_s`, :func:`worst_case_s`):

* one HTTP call's sends: ``(1 + HTTP_RETRIES) x (CONNECT_TIMEOUT_S + READ_TIMEOUT_S) +
  sum(HTTP_PAUSES_S)`` = 4 x 35 + 3 = :data:`SENDS_WORST_S` (143 s): a server that accepts and
  never answers. A stopped NetBox refuses at once and costs the 3 s of pauses; a host gone
  from the network costs 4 x 5 + 3 = 23 s.
* one HTTP call: its wait for a turn, then its sends: ``QUEUE_S + SENDS_WORST_S`` = 30 + 143
  = :data:`CALL_WORST_S` (173 s).
* one records call: the outage wait plus the one HTTP call that may have started just before
  it ran out: ``OUTAGE_S + CALL_WORST_S`` = :data:`WORST_CASE_S` (293 s). Anything that must
  outlive a NetBox call (a lease's TTL) is sized from this.

Above them, the orchestrator retries a step that failed on a transient error
(``flows.walk.RETRY``: 3 retries after 2, 10 and 30 s); every try of the step starts with
the records layer's budget afresh, and a result NetBox could not take is spooled meanwhile
(:mod:`bringup.netbox.spool`), so a step's work is not done again.

What is sent again: connection refused and 502/503/504 mean the server did not act, so any
method is sent again. A connection that broke after the request went out (reset, closed
without an answer, read timeout) may have been acted on, so only idempotent methods are sent
again (RFC 9110 section 9.2.2). The common case is harmless: gunicorn closes an idle
keep-alive connection (after 2 s by default) just as the pool hands it out again, and a GET
sent on it comes back as a ConnectionError; a POST on it is not resent, and its error says so.
A ``Retry-After`` header is not obeyed: urllib3 would sleep it out uncapped, past the budget;
the records layer waits out a longer outage instead.

How many are in flight: at most :data:`MAX_INFLIGHT` (settings ``netbox_max_inflight``)
requests of one process are at one NetBox at once; the others wait their turn on our side,
where the wait is no part of the read timeout. A run walks every node on a thread of its own
and each held lease renews on another, so a fleet of ten-odd nodes could send twice as many
requests at once to a NetBox of 12 gunicorn threads on a loaded 2-core machine: they queue
there, behind each other's CPU, against the read timeout (the likely cause of CI's failure at
43fedd4: one node's requests went unanswered past the 30 s read timeout for two minutes, its
configure result spooled, the run failed). A busy NetBox does as much work with a
short queue as with a long one; bounded, each request takes its own time and a few others'.
The wait for a turn is bounded too (:data:`QUEUE_S`, then :class:`Busy`, which the records
layer waits out like any outage), and it is part of one call's worst case, so the lease's
margins (:mod:`bringup.netbox.lease`) still hold. A request that took longer than
:data:`SLOW_S`, its wait included, is logged.
"""

from __future__ import annotations

import logging
import threading
import time

import pynetbox
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from bringup.netbox.request_count import COUNT, endpoint
from bringup.retry import Backoff

log = logging.getLogger(__name__)

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})

#: seconds to open a connection: a NetBox on the network answers in milliseconds
CONNECT_TIMEOUT_S = 5.0
#: seconds to wait for an answer: the largest page of devices with config contexts, with room
READ_TIMEOUT_S = 30.0
#: times the HTTP session sends a request again (see the module doc for which requests)
HTTP_RETRIES = 3
#: urllib3's backoff factor: after the n-th failure in a row it pauses factor x 2^(n-1), the first 0
HTTP_BACKOFF_FACTOR = 0.5
#: requests one process has at one NetBox at once (settings ``netbox_max_inflight``): NetBox
#: serves each on a thread of one of its worker processes, so a few more than its processes
#: keep them all busy; a site whose NetBox runs more workers raises it
MAX_INFLIGHT = 4
#: seconds a request waits for its turn before it fails as :class:`Busy` (a NetBox that has
#: not finished one of the process's requests in this long is as slow as one that has not
#: answered one)
QUEUE_S = 30.0
#: seconds after which a request (its wait for a connection included) is logged as slow
SLOW_S = 10.0
#: the records layer rides out an outage this long (settings ``netbox_outage_s`` overrides it)
OUTAGE_S = 120.0
#: the records layer's pauses between tries while NetBox is unreachable
OUTAGE_BACKOFF = Backoff(first=1.0, factor=2.0, cap=15.0)


def http_pauses_s(retries: int = HTTP_RETRIES, factor: float = HTTP_BACKOFF_FACTOR) -> tuple[float, ...]:
    """The pauses urllib3 makes before each send again (its formula, without jitter)."""
    return tuple(0.0 if n <= 1 else min(Retry.DEFAULT_BACKOFF_MAX, factor * 2 ** (n - 1))
                 for n in range(1, retries + 1))


def sends_worst_s(retries: int = HTTP_RETRIES, connect_s: float = CONNECT_TIMEOUT_S,
                  read_s: float = READ_TIMEOUT_S) -> float:
    """The longest one HTTP call's sends can take: every try timing out, and the pauses between."""
    return (1 + retries) * (connect_s + read_s) + sum(http_pauses_s(retries))


def call_worst_s(retries: int = HTTP_RETRIES, connect_s: float = CONNECT_TIMEOUT_S,
                 read_s: float = READ_TIMEOUT_S, queue_s: float = QUEUE_S) -> float:
    """The longest one HTTP call can take: its whole wait for a turn, then its sends at their worst."""
    return queue_s + sends_worst_s(retries, connect_s, read_s)


def worst_case_s(outage_s: float = OUTAGE_S) -> float:
    """The longest one records call can take: the outage wait, then one last HTTP call."""
    return outage_s + call_worst_s()


#: pauses of the HTTP session between sends, in seconds
HTTP_PAUSES_S = http_pauses_s()
#: the longest one HTTP call's sends can take, its turn come, in seconds
SENDS_WORST_S = sends_worst_s()
#: the longest one HTTP call to NetBox can take, in seconds
CALL_WORST_S = call_worst_s()
#: the longest one NetBox call through the records layer can take, in seconds
WORST_CASE_S = worst_case_s()


#: POSTs that only read: bringup sends GraphQL queries, never mutations (bringup.netbox.graphql)
READ_ONLY_POSTS = ("/graphql/",)


def idempotent(method: str | None, url: str | None) -> bool:
    """May this request be sent again after a connection broke mid-way? A GraphQL query
    may: it reads. (Without it, a pooled keep-alive connection that gunicorn closed as it
    was reused — its keep-alive is 2 s, a poll's pause — broke a read: measured.)"""
    m = (method or "").upper()
    return m in IDEMPOTENT or (m == "POST" and (url or "").split("?")[0].endswith(READ_ONLY_POSTS))


class IdempotentRetry(Retry):
    """A broken connection is retried for idempotent requests only; the rest as Retry."""

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
        if error is not None and self._is_read_error(error) and not idempotent(method, url):
            # read=False: Retry re-raises the error itself instead of counting it
            return Retry.increment(self.new(read=False), method, url, response, error, _pool, _stacktrace)
        return super().increment(method, url, response, error, _pool, _stacktrace)


def retry_policy(retries: int = HTTP_RETRIES) -> Retry:
    """Up to ``retries`` sends again, with growing pauses (:data:`HTTP_PAUSES_S`)."""
    return IdempotentRetry(total=retries, connect=retries, read=retries, status=retries,
                           backoff_factor=HTTP_BACKOFF_FACTOR, status_forcelist=(502, 503, 504),
                           allowed_methods=None, raise_on_status=False, respect_retry_after_header=False)


class Busy(requests.Timeout):
    """No turn came for a request in :data:`QUEUE_S`: the process's other requests to this
    NetBox have not finished. Transient, as a read timeout is (the adapter says so)."""


_turns_lock = threading.Lock()
_turns: dict[tuple[str, int], threading.BoundedSemaphore] = {}


def turns(url: str, inflight: int) -> threading.BoundedSemaphore:
    """The process's turns at the NetBox at ``url``: every session this process opens to it
    with the same bound shares them (the bound is the process's, as NetBox's load is)."""
    key = (url.rstrip("/"), inflight)
    with _turns_lock:
        if key not in _turns:
            _turns[key] = threading.BoundedSemaphore(inflight)
        return _turns[key]


def connect(url: str, token: str, *, timeout: float | tuple[float, float] = (CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
            retries: int = HTTP_RETRIES, inflight: int = MAX_INFLIGHT, queue_s: float = QUEUE_S) -> pynetbox.api:
    """A pynetbox API with timeouts (connect, read), retries (:func:`retry_policy`) and at
    most ``inflight`` requests of this process at NetBox at once, each waiting at most
    ``queue_s`` for its turn: the HTTP layer of NetBox's retry budget (module doc)."""
    if inflight < 1:
        raise ValueError(f"netbox_max_inflight must be at least 1, not {inflight}")
    api = pynetbox.api(url, token=token)
    session = requests.Session()
    retry = retry_policy(retries)
    for scheme in ("http://", "https://"):
        session.mount(scheme, HTTPAdapter(max_retries=retry, pool_maxsize=max(inflight, 10)))
    original = session.request
    slots = turns(url, inflight)

    def request_with_timeout(method, url, **kw):
        kw.setdefault("timeout", timeout)
        COUNT.record(method, url)     # what a run costs NetBox (bringup.netbox.request_count)
        began = time.monotonic()
        # the turn is held through urllib3's sends again: one call waits once
        if not slots.acquire(timeout=queue_s):
            raise Busy(f"NetBox is busy: no turn for {method.upper()} {endpoint(url)} in {queue_s:.0f} s "
                       f"(this process's {inflight} requests at once had not finished)")
        try:
            return original(method, url, **kw)
        finally:
            slots.release()
            took = time.monotonic() - began
            if took > SLOW_S:
                log.warning("NetBox took %.1f s to answer %s %s (its wait for a turn included)",
                            took, method.upper(), endpoint(url))

    session.request = request_with_timeout  # type: ignore[method-assign]
    api.http_session = session
    return api


__all__ = ["CALL_WORST_S", "QUEUE_S", "SENDS_WORST_S", "Busy", "turns", "sends_worst_s", "CONNECT_TIMEOUT_S", "HTTP_BACKOFF_FACTOR", "HTTP_PAUSES_S", "HTTP_RETRIES",
           "IDEMPOTENT", "MAX_INFLIGHT", "OUTAGE_BACKOFF", "OUTAGE_S", "READ_TIMEOUT_S", "SLOW_S", "WORST_CASE_S", "IdempotentRetry",
           "call_worst_s", "connect", "http_pauses_s", "retry_policy", "worst_case_s"]
