"""Watch: the change stream behind ``?watch=true`` (``kubectl get -w``, informers, the
Python client's ``watch.Watch``).

Every store write is kept in a bounded history with the cluster-wide resourceVersion it
produced. A watch from resourceVersion N replays the kept changes after N and then
follows new ones; a watch without one (or from "0") first sends every current object as
ADDED, as the real server does. An N older than the history is answered with an ERROR
event carrying a 410 Gone Status (the client lists again). With a selector, an object
that stops matching is sent as DELETED and one that starts matching as ADDED.
The stream format (one JSON ``{"type", "object"}`` document per line over a chunked
response) is the one described in the Kubernetes API concepts page
(tests/fixtures/kube/SOURCES.md).
"""

from __future__ import annotations

import copy
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from .resources import Resource
from .store import ApiStatus, Store

Pred = Callable[[dict[str, Any]], bool]


class Stream:
    """A streamed response: the handler writes each item of ``chunks`` as it comes, in
    a chunked HTTP body. ``content_type`` says what the chunks are."""

    def __init__(self, chunks: Iterator[bytes], content_type: str) -> None:
        self.chunks = chunks
        self.content_type = content_type


class WatchHub:
    def __init__(self, store: Store, keep: int = 5000) -> None:
        self.store = store
        self.cond = threading.Condition()
        # (resourceVersion, resource key, namespace, old, new)
        self.history: deque[tuple[int, str, str, dict | None, dict | None]] = deque(maxlen=keep)
        self.first_rv = store.rv  # changes before this one were never kept
        store.hooks.append(self.record)

    def record(self, res: Resource, old: dict | None, new: dict | None) -> None:
        """Store hook (called under the store lock, after the write)."""
        rv = self.store.rv
        old = copy.deepcopy(old)
        if new is None and old is not None:  # a deletion is seen at the revision that made it
            old["metadata"]["resourceVersion"] = str(rv)
        ns = ((new or old or {}).get("metadata") or {}).get("namespace", "")
        with self.cond:
            if len(self.history) == self.history.maxlen:
                self.first_rv = self.history[0][0]
            self.history.append((rv, f"{res.group}/{res.plural}", ns, old, copy.deepcopy(new)))
            self.cond.notify_all()

    def _since(self, rv: int, rkey: str, namespace: str | None) -> list[tuple[int, dict | None, dict | None]]:
        return [(r, o, n) for r, k, ns, o, n in self.history
                if r > rv and k == rkey and (namespace is None or ns == namespace)]

    def events(self, res: Resource, namespace: str | None, pred: Pred, resource_version: str,
               timeout: float, stop: threading.Event | None = None) -> Iterator[dict[str, Any]]:
        """Watch events (``{"type", "object"}``) until ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        rkey = f"{res.group}/{res.plural}"
        if resource_version in ("", "0"):
            items, rv_text = self.store.list(res, namespace, pred)
            last = int(rv_text)
            for obj in items:
                yield {"type": "ADDED", "object": obj}
        else:
            try:
                last = int(resource_version)
            except ValueError:
                raise ApiStatus(400, f"invalid resource version {resource_version!r}") from None
            with self.cond:
                too_old = last < self.first_rv
            if too_old:
                gone = ApiStatus(410, f"too old resource version: {last} ({self.first_rv})", reason="Expired")
                yield {"type": "ERROR", "object": gone.body()}
                return
        while stop is None or not stop.is_set():
            with self.cond:
                batch = self._since(last, rkey, namespace)
                if not batch:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    self.cond.wait(min(left, 1.0))
                    continue
            for rv, old, new in batch:
                last = rv
                event = classify(old, new, pred)
                if event:
                    yield event
            if time.monotonic() >= deadline:
                return


def classify(old: dict | None, new: dict | None, pred: Pred) -> dict[str, Any] | None:
    """The watch event one change is to a watcher with selector ``pred`` (None: unseen)."""
    was = old is not None and pred(old)
    now = new is not None and pred(new)
    if now and not was:
        return {"type": "ADDED", "object": new}
    if now and was:
        return {"type": "MODIFIED", "object": new}
    if was and new is None:
        return {"type": "DELETED", "object": old}
    if was:  # still exists, stopped matching the selector
        return {"type": "DELETED", "object": new}
    return None
