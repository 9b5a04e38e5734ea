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

* one HTTP call: ``(1 + HTTP_RETRIES) x (CONNECT_TIMEOUT_S + READ_TIMEOUT_S) + sum(HTTP_PAUSES_S)``
  = 4 x 35 + 3 = :data:`CALL_WORST_S` (143 s): a server that accepts and never answers. A
  stopped NetBox refuses at once and costs the 3 s of pauses; a host gone from the network
  costs 4 x 5 + 3 = 23 s.
* one records call: the outage wait plus the one HTTP call that may have started just before
  it ran out: ``OUTAGE_S + CALL_WORST_S`` = :data:`WORST_CASE_S` (263 s). Anything that must
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
"""

from __future__ import annotations

import pynetbox
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from bringup.netbox.request_count import COUNT
from bringup.retry import Backoff

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})

#: seconds to open a connection: a NetBox on the network answers in milliseconds
CONNECT_TIMEOUT_S = 5.0
#: seconds to wait for an answer: the largest page of devices with config contexts, with room
READ_TIMEOUT_S = 30.0
#: times the HTTP session sends a request again (see the module doc for which requests)
HTTP_RETRIES = 3
#: urllib3's backoff factor: after the n-th failure in a row it pauses factor x 2^(n-1), the first 0
HTTP_BACKOFF_FACTOR = 0.5
#: the records layer rides out an outage this long (settings ``netbox_outage_s`` overrides it)
OUTAGE_S = 120.0
#: the records layer's pauses between tries while NetBox is unreachable
OUTAGE_BACKOFF = Backoff(first=1.0, factor=2.0, cap=15.0)


def http_pauses_s(retries: int = HTTP_RETRIES, factor: float = HTTP_BACKOFF_FACTOR) -> tuple[float, ...]:
    """The pauses urllib3 makes before each send again (its formula, without jitter)."""
    return tuple(0.0 if n <= 1 else min(Retry.DEFAULT_BACKOFF_MAX, factor * 2 ** (n - 1))
                 for n in range(1, retries + 1))


def call_worst_s(retries: int = HTTP_RETRIES, connect_s: float = CONNECT_TIMEOUT_S,
                 read_s: float = READ_TIMEOUT_S) -> float:
    """The longest one HTTP call can take: every try timing out, and the pauses between."""
    return (1 + retries) * (connect_s + read_s) + sum(http_pauses_s(retries))


def worst_case_s(outage_s: float = OUTAGE_S) -> float:
    """The longest one records call can take: the outage wait, then one last HTTP call."""
    return outage_s + call_worst_s()


#: pauses of the HTTP session between sends, in seconds
HTTP_PAUSES_S = http_pauses_s()
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


def connect(url: str, token: str, *, timeout: float | tuple[float, float] = (CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
            retries: int = HTTP_RETRIES) -> pynetbox.api:
    """A pynetbox API with timeouts (connect, read) and retries (:func:`retry_policy`): the
    HTTP layer of NetBox's retry budget (:mod:`bringup.netbox.http_retry`)."""
    api = pynetbox.api(url, token=token)
    session = requests.Session()
    retry = retry_policy(retries)
    session.mount("http://", HTTPAdapter(max_retries=retry, pool_maxsize=32))
    session.mount("https://", HTTPAdapter(max_retries=retry, pool_maxsize=32))
    original = session.request

    def request_with_timeout(method, url, **kw):
        kw.setdefault("timeout", timeout)
        COUNT.record(method, url)     # what a run costs NetBox (bringup.netbox.request_count)
        return original(method, url, **kw)

    session.request = request_with_timeout  # type: ignore[method-assign]
    api.http_session = session
    return api


__all__ = ["CALL_WORST_S", "CONNECT_TIMEOUT_S", "HTTP_BACKOFF_FACTOR", "HTTP_PAUSES_S", "HTTP_RETRIES",
           "IDEMPOTENT", "OUTAGE_BACKOFF", "OUTAGE_S", "READ_TIMEOUT_S", "WORST_CASE_S", "IdempotentRetry",
           "call_worst_s", "connect", "http_pauses_s", "retry_policy", "worst_case_s"]
