"""NetBox requests counted where they leave bringup (issue #25, item 1): by method and
endpoint, for what a run costs the source of truth per node.

Every request of the NetBox adapter goes through the one HTTP session
:func:`bringup.netbox.http_retry.connect` builds, which records it here (once per request
bringup sends: urllib3's own sends again after a refused connection are not counted). The
count is the process's: a Prefect worker runs each flow run in a process of its own, so a
run's figure is the difference of two snapshots taken in it (:func:`since`). Endpoints are
named with their ids folded (``dcim/devices/{id}/``), so a table has one row per kind of
request, not per device.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from urllib.parse import urlsplit

#: a path segment that is an object's id
_ID = re.compile(r"/\d+(?=/|$)")

Key = tuple[str, str]


def endpoint(url: str) -> str:
    """The endpoint of ``url`` as the table names it: the path after ``/api/`` (GraphQL's
    ``graphql/`` as it is), ids folded to ``{id}``, the query left out."""
    path = urlsplit(url).path
    path = path.split("/api/", 1)[1] if "/api/" in path else path.lstrip("/")
    return _ID.sub("/{id}", "/" + path).lstrip("/")


class RequestCount:
    """Requests by (method, endpoint); safe to record from the run's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n: Counter[Key] = Counter()

    def record(self, method: str, url: str) -> None:
        key = (method.upper(), endpoint(url))
        with self._lock:
            self._n[key] += 1

    def snapshot(self) -> Counter[Key]:
        with self._lock:
            return Counter(self._n)


#: the process's count (the adapter's session records into it)
COUNT = RequestCount()


def since(before: Counter[Key], after: Counter[Key] | None = None) -> Counter[Key]:
    """What was sent between two snapshots (``after``: now)."""
    return (COUNT.snapshot() if after is None else after) - before


def rows(counts: Counter[Key], nodes: int) -> list[dict[str, object]]:
    """The table of a run: one row per (method, endpoint), most requests first, with the
    share of one node (``nodes`` the run walked)."""
    return [{"method": m, "endpoint": e, "requests": n, "per node": round(n / nodes, 1) if nodes else ""}
            for (m, e), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def summary(counts: Counter[Key], nodes: int) -> str:
    """One line: the total, per node, and by method."""
    total = sum(counts.values())
    methods = Counter()
    for (m, _), n in counts.items():
        methods[m] += n
    per = f" ({total / nodes:.1f} a node)" if nodes else ""
    by = ", ".join(f"{m} {n}" for m, n in sorted(methods.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} NetBox request(s) for {nodes} node(s){per}" + (f": {by}" if by else "")
