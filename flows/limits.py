"""Global concurrency limits of the flows: names, defaults, creation, and taking a slot.

Tasks hold a slot of Prefect's global concurrency limits while they use a shared
resource (:func:`slot`); a full limit makes them wait, so runs queue rather than fail.
Limits are upserted here so an operator can resize them in the UI or with
``prefect gcl update``, and bringup never shrinks them back silently.

Why not ``prefect.concurrency.sync.concurrency``: its client funnels every acquisition
for the same limit names through one queue and sleeps the server's Retry-After inside
it, so hundreds of waiting tasks are served one after another (measured: 64 simulated
nodes took 195 s with it, 6 s of orchestration without). Polling the server from every
waiting thread instead overloads it (each refused try is a database write; SQLite
answered 503). So :func:`slot` queues in two places: inside this process, a semaphore
sized like the limit lets only as many threads ask the server as could possibly get a
slot (waiters block without any traffic); the server's lease then enforces the limit
across processes and flow runs, polled with jitter when another run holds slots.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prefect.client.orchestration import get_client
from prefect.exceptions import PrefectHTTPStatusError

BMC_LIMIT = "bmc-sessions"
INSTALL_LIMIT = "os-installs"
BURNIN_PER_RACK = 2
DEFAULT_LIMITS = {INSTALL_LIMIT: 8, BMC_LIMIT: 32}


def burnin_limit(rack: str) -> str:
    return f"burnin-rack-{rack}"


def ensure_limits(limits: dict[str, int], *, overwrite: bool = True) -> list[str]:
    """Create missing limits; with ``overwrite`` also resize existing ones. Returns the
    names created."""
    created = []
    with get_client(sync_client=True) as client:
        for name, limit in limits.items():
            try:
                client.read_global_concurrency_limit_by_name(name)
                exists = True
            except Exception:
                exists = False
            if not exists:
                created.append(name)
            if overwrite or not exists:
                client.upsert_global_concurrency_limit_by_name(name, limit)
    return created


def ensure_rack_limits(racks: list[str]) -> list[str]:
    """Burn-in limits for the racks of a run; existing ones keep their operator-set size."""
    return ensure_limits({burnin_limit(r): BURNIN_PER_RACK for r in sorted(set(racks))}, overwrite=False)


#: a lease outlives a crashed holder by at most this long, then its slot frees itself
#: (60 s is the server's minimum; holders renew it every third of that)
LEASE_SECONDS = 60.0
#: longest pause between two tries of a waiting task (the server may ask for longer)
MAX_POLL_SECONDS = 2.0


_gates: dict[str, threading.BoundedSemaphore | None] = {}
_lock = threading.Lock()
#: one slot request of this process on the wire at a time: the requests take
#: milliseconds, but on a SQLite-backed server two concurrent ones collide and one is
#: refused with 503 (measured: with 2 slots free, 4 threads got them one by one)
_wire = threading.Lock()
_client = None


def _shared_client():
    """One Prefect client for all slot traffic of this process (httpx is thread-safe);
    a client per slot made 64 waiting threads hold 64 connections."""
    global _client
    with _lock:
        if _client is None:
            _client = get_client(sync_client=True)
            _client.__enter__()
        return _client


def _gate(name: str) -> threading.BoundedSemaphore | None:
    """This process's semaphore for a limit, sized like the limit (None: no such limit)."""
    with _lock:
        known = name in _gates
    if not known:
        try:
            limit = _shared_client().read_global_concurrency_limit_by_name(name).limit
            gate = threading.BoundedSemaphore(max(1, limit))
        except Exception:  # no such limit: the server will not enforce one either
            gate = None
        with _lock:
            _gates.setdefault(name, gate)
    return _gates[name]


@contextmanager
def _local(gates: list[threading.BoundedSemaphore]) -> Iterator[None]:
    taken = []
    try:
        for g in gates:
            g.acquire()
            taken.append(g)
        yield
    finally:
        for g in reversed(taken):
            g.release()


@contextmanager
def slot(names: str | list[str], *, lease_seconds: float = LEASE_SECONDS) -> Iterator[None]:
    """Hold one slot of every named limit for the duration of the block, waiting as long
    as it takes. Limits that do not exist are ignored, as the server ignores them."""
    names = sorted([names] if isinstance(names, str) else set(names))  # one order: no deadlock
    with _local([g for g in (_gate(n) for n in names) if g is not None]):
        client = _shared_client()
        busy = 0
        while True:
            try:
                with _wire:
                    resp = client.increment_concurrency_slots_with_lease(names, 1, "concurrency", lease_seconds)
                break
            except PrefectHTTPStatusError as exc:
                status = exc.response.status_code
                if status == 503:  # the server's database is busy: try again soon
                    busy += 1
                    time.sleep(min(0.05 * 2 ** busy, MAX_POLL_SECONDS) * random.uniform(0.5, 1.0))
                    continue
                if status != 423:  # 423: another flow run holds the slots
                    raise
                asked = float(exc.response.headers.get("Retry-After", MAX_POLL_SECONDS))
                time.sleep(min(asked, MAX_POLL_SECONDS) * random.uniform(0.5, 1.0))
        lease_id = resp.json().get("lease_id")
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(lease_seconds / 3):
                try:
                    client.renew_concurrency_lease(lease_id, lease_seconds)
                except Exception:  # a missed renewal is retried; the lease has slack
                    pass

        keeper = threading.Thread(target=renew, name=f"lease-{names[0]}", daemon=True)
        keeper.start()
        try:
            yield
        finally:
            stop.set()
            keeper.join(timeout=5)
            if lease_id:
                _release(client, lease_id)


def _release(client, lease_id) -> None:
    for attempt in range(8):
        try:
            with _wire:
                client.release_concurrency_slots_with_lease(lease_id)
            return
        except PrefectHTTPStatusError as exc:
            if exc.response.status_code != 503:
                raise
            time.sleep(0.05 * 2 ** attempt)
    # still busy: the lease expires by itself after LEASE_SECONDS
