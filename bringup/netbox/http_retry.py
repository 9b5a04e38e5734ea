"""What an HTTP adapter sends again, and when: urllib3's Retry with one rule added.

Connection refused and 502/503/504 mean the server did not act, so any method is sent
again. A connection that broke after the request went out (reset, closed without an
answer, read timeout) may have been acted on, so only idempotent methods are sent again
(RFC 9110 section 9.2.2). The common case is harmless: gunicorn closes an idle keep-alive
connection (after 2 s by default) just as the pool hands it out again, and a GET sent on
it comes back as a ConnectionError; a POST on it is not resent, and its error says so.
"""

from __future__ import annotations

from urllib3.util.retry import Retry

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


class IdempotentRetry(Retry):
    """A broken connection is retried for idempotent methods only; the rest as Retry."""

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
        if error is not None and self._is_read_error(error) and (method or "").upper() not in IDEMPOTENT:
            # read=False: Retry re-raises the error itself instead of counting it
            return Retry.increment(self.new(read=False), method, url, response, error, _pool, _stacktrace)
        return super().increment(method, url, response, error, _pool, _stacktrace)


def retry_policy(retries: int = 3) -> Retry:
    """Up to ``retries`` sends again, with a growing pause (0.5 s, 1 s, 2 s ...)."""
    return IdempotentRetry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=0.5,
                           status_forcelist=(502, 503, 504), allowed_methods=None, raise_on_status=False)
