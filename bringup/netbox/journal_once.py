"""A journal entry is written once, even when NetBox's answer to its POST is lost.

The HTTP layer never sends a POST again after a timeout or a broken connection
(:mod:`bringup.netbox.http_retry`): NetBox may have taken it. The records layer then makes
the call again (it rides out outages), and a plain second POST would leave the entry twice:
a NetBox whose processes are stopped (SIGSTOP) keeps each POST in its listen queue and
takes every one of them when it runs again, answering nobody.

So each write whose answer was lost is remembered (node, text, when it was sent); when the
same entry is asked for again, the node's entries created since then are read first and
the one that landed, if any, is the answer. A NetBox that runs again works through its
queue with several threads, so the lost POST may land just after that read (seen: the
stall scenario of tests/integration/faults/degraded/test_load_and_latency.py): it is read once more
after :data:`SETTLE_S`, and after a new POST the entries with the same text are read again
and all but the first deleted. A write NetBox refused outright (connection refused) is not
remembered: nothing reached it. Pure of I/O: the adapter hands in the POST, the read and
the delete.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

import requests

#: how far NetBox's clock may lag ours when asking for entries "created since": a wide
#: margin only makes the one read on a retry a little longer
CLOCK_MARGIN = timedelta(minutes=10)

#: seconds to let a NetBox that just ran again finish the requests it had queued
SETTLE_S = 2.0

Post = Callable[[int, str, str], int]
CreatedSince = Callable[[int, datetime], Iterable[tuple[int, str]]]
Delete = Callable[[int], None]


def maybe_taken(exc: BaseException) -> bool:
    """Could NetBox have taken a request that failed this way? Not when the connection was
    never made (refused, or no answer to the connect); yes after it was (a read timeout, a
    connection closed or reset under the request)."""
    if isinstance(exc, requests.ConnectTimeout):
        return False
    if isinstance(exc, requests.ConnectionError):
        text = f"{exc!r} {exc.__context__!r}"
        return not any(s in text for s in ("NewConnectionError", "Connection refused", "ConnectTimeout"))
    return isinstance(exc, requests.Timeout)


class JournalOnce:
    """``write(node_id, comments, kind) -> entry id``, at most one entry per lost answer."""

    def __init__(self, post: Post, created_since: CreatedSince, delete: Delete,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._post, self._created_since, self._delete = post, created_since, delete
        self._clock, self._sleep = clock, sleep
        self._unsure: dict[tuple[int, str], datetime] = {}
        self._lock = threading.Lock()

    def write(self, node_id: int, comments: str, kind: str) -> int:
        key = (node_id, hashlib.sha256(comments.encode()).hexdigest())
        with self._lock:
            since = self._unsure.get(key)
        if since is not None:
            landed = self._landed(node_id, comments, since)
            if not landed:
                self._sleep(SETTLE_S)
                landed = self._landed(node_id, comments, since)
            if landed:   # the lost POST landed: that entry is this write
                self._forget(key)
                return landed[0]
        sent = self._clock()
        try:
            entry_id = self._post(node_id, comments, kind)
        except (requests.ConnectionError, requests.Timeout) as exc:
            if maybe_taken(exc):
                with self._lock:   # the first lost try's time: a later one landed after it
                    self._unsure.setdefault(key, sent - CLOCK_MARGIN)
            raise
        if since is not None:   # the lost POST may still land: keep the first, delete the rest
            landed = self._landed(node_id, comments, since) or [entry_id]
            for later in landed[1:]:
                self._delete(later)
            entry_id = landed[0]
        self._forget(key)
        return entry_id

    def _landed(self, node_id: int, comments: str, since: datetime) -> list[int]:
        return sorted(i for i, text in self._created_since(node_id, since) if text == comments)

    def _forget(self, key: tuple[int, str]) -> None:
        with self._lock:
            self._unsure.pop(key, None)

    @property
    def unsure(self) -> int:
        """Writes whose answer was lost and that were not asked for again yet."""
        with self._lock:
            return len(self._unsure)


__all__ = ["CLOCK_MARGIN", "SETTLE_S", "JournalOnce", "maybe_taken"]
