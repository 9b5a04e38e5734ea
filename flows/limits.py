"""Global concurrency limits of the flows: names, defaults, creation, and taking a slot.

Tasks hold a slot of Prefect's global concurrency limits while they use a shared
resource (:func:`slot`); a full limit makes them wait, so runs queue rather than fail.
Limits are upserted here so an operator can resize them in the UI or with
``prefect gcl update``, and bringup never shrinks them back silently.

Why not ``prefect.concurrency.sync.concurrency``: its client funnels every acquisition
for the same limit names through one queue and sleeps the server's Retry-After inside
it, so hundreds of waiting tasks are served one after another (measured: 64 simulated
nodes took 195 s with it, 6 s of orchestration without). Polling the server from every
waiting thread instead overloads it (each refused try is a database write).

So :func:`slot` queues in two places. Inside this process, a :class:`Gate` sized like
the limit orders the waiters (stage priority, then the run's rack round-robin) and lets
only as many ask the server as could get a slot; waiters block without any traffic.
The server's lease then enforces the limit across processes and flow runs. A holder
that finishes hands its lease to the next waiter for the same limits, so under load a
slot changes hands in microseconds instead of two server round trips (measured at 256
nodes: 0.1-4 s each, while OS install slots sat idle).
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager

import httpx
from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound, PrefectHTTPStatusError

from bringup.retry import Backoff, retry

from .orchestrator import is_unavailable, through_outage

BMC_LIMIT = "bmc-sessions"
INSTALL_LIMIT = "os-installs"
BURNIN_PER_RACK = 2
DEFAULT_LIMITS = {INSTALL_LIMIT: 8, BMC_LIMIT: 32}


def burnin_limit(rack: str) -> str:
    return f"burnin-rack-{rack}"


def ensure_limits(limits: dict[str, int], *, overwrite: bool = True) -> list[str]:
    """Create missing limits; with ``overwrite`` also resize existing ones. Returns the
    names created. One listing instead of a read per limit: a run with many racks
    starts sooner."""
    created = []
    with get_client(sync_client=True) as client:
        sizes = _limit_sizes(client)
        for name, limit in limits.items():
            if name in sizes and not overwrite:
                continue
            try:
                client.upsert_global_concurrency_limit_by_name(name, limit)
            except ObjectAlreadyExists:
                # another run created it between our listing and our create (two runs
                # started at once on a fresh server): theirs stands unless we resize
                if overwrite:
                    client.upsert_global_concurrency_limit_by_name(name, limit)
                continue
            if name not in sizes:
                created.append(name)
    return created


def _limit_sizes(client, page: int = 200) -> dict[str, int]:
    """Every global concurrency limit on the server, by name."""
    sizes: dict[str, int] = {}
    offset = 0
    while True:
        got = client.read_global_concurrency_limits(limit=page, offset=offset)
        sizes.update({lim.name: lim.limit for lim in got})
        if len(got) < page:
            return sizes
        offset += len(got)


def ensure_rack_limits(racks: list[str]) -> list[str]:
    """Burn-in limits for the racks of a run; existing ones keep their operator-set size."""
    return ensure_limits({burnin_limit(r): BURNIN_PER_RACK for r in sorted(set(racks))}, overwrite=False)


#: a lease outlives a crashed holder by at most this long, then its slot frees itself
#: (60 s is the server's minimum; holders renew it every third of that)
LEASE_SECONDS = 60.0
#: longest pause between two tries of a waiting task (the server may ask for longer)
MAX_POLL_SECONDS = 2.0
#: connections of the shared slot client: every lease renews and releases, and a
#: waiter asks as soon as its local permit comes; Prefect's default (16, 8 kept alive)
#: made them queue for a connection and reconnect (measured at 256 nodes)
SLOT_CONNECTIONS = 64

_gates: dict[str, Gate] = {}
_lock = threading.Lock()
_wire = threading.Lock()
_parallel: bool | None = None
_client = None
_releaser: ThreadPoolExecutor | None = None
_pending: set[Future] = set()


class _Waiter:
    __slots__ = ("key", "lease", "ready")

    def __init__(self, key: tuple[str, ...] | None) -> None:
        self.ready = threading.Event()
        self.key = key
        self.lease: _Lease | None = None


class Gate:
    """A semaphore that serves waiters by priority (higher first), then by order (lower
    first), then first come first served. A released permit passes straight to the next
    waiter, so a later arrival can never overtake a queued one (``threading.Semaphore``
    wakes an arbitrary waiter).

    A releasing holder may also hand its server lease to that next waiter, when the
    waiter wants the same limits (``key``): see :func:`slot`."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a gate needs at least one permit, got {size}")
        self.size = size
        self._free = size
        self._lock = threading.Lock()
        self._waiters: list[tuple[int, int, int, _Waiter]] = []
        self._seq = itertools.count()

    def acquire(self, priority: int = 0, order: int = 0, key: tuple[str, ...] | None = None) -> _Lease | None:
        """Take a permit, waiting behind higher priorities, lower orders and earlier
        arrivals. Returns the lease a releasing holder handed over with it, if any."""
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return None
            waiter = _Waiter(key)
            heapq.heappush(self._waiters, (-priority, order, next(self._seq), waiter))
        waiter.ready.wait()
        return waiter.lease

    def release(self, key: tuple[str, ...] | None = None, lease: _Lease | None = None) -> bool:
        """Pass the permit on. With a ``lease``, hand it over too if the next waiter asked
        for the same ``key``; True if it was handed over (the caller must then keep
        every other permit of the key: they belong to the new holder)."""
        with self._lock:
            if self._waiters:
                waiter = heapq.heappop(self._waiters)[-1]
                handed = lease is not None and key is not None and waiter.key == key
                if handed:
                    waiter.lease = lease
                waiter.ready.set()
                return handed
            if self._free >= self.size:
                raise RuntimeError("gate released more often than acquired")
            self._free += 1
            return False

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def free(self) -> int:
        return self._free


class _Lease:
    """Slots held on the server: renewed in the background until given back."""

    def __init__(self, client, names: list[str], lease_seconds: float) -> None:
        self.client = client
        self.id = _increment(client, names, lease_seconds)
        self._stop = threading.Event()
        if self.id:
            threading.Thread(target=self._renew, args=(lease_seconds,), name=f"lease-{names[0]}",
                             daemon=True).start()

    def _renew(self, lease_seconds: float) -> None:
        while not self._stop.wait(lease_seconds / 3):
            try:
                with _on_wire():
                    self.client.renew_concurrency_lease(self.id, lease_seconds)
            except Exception:  # noqa: BLE001, S110 - a missed renewal is retried; the lease has slack
                pass

    def give_back(self) -> None:
        """Stop renewing and release on the server, in the background: neither this
        holder nor the next one waits for the round trip."""
        self._stop.set()
        if not self.id:
            return
        global _releaser
        with _lock:
            if _releaser is None:
                _releaser = ThreadPoolExecutor(max_workers=8, thread_name_prefix="slot-release")
            fut = _releaser.submit(_release, self.client, self.id)
            _pending.add(fut)
        fut.add_done_callback(_forget)


def _shared_client():
    """One Prefect client for all slot traffic of this process (httpx is thread-safe);
    a client per slot made 64 waiting threads hold 64 connections."""
    global _client
    with _lock:
        if _client is None:
            limits = httpx.Limits(max_connections=SLOT_CONNECTIONS, max_keepalive_connections=SLOT_CONNECTIONS,
                                  keepalive_expiry=25)
            _client = get_client(httpx_settings={"limits": limits}, sync_client=True)
            _client.__enter__()
        return _client


def _gate(name: str) -> Gate | None:
    """This process's gate for a limit, sized like the limit when first used (None: no
    such limit, asked again next time, as an operator may create it meanwhile)."""
    with _lock:
        gate = _gates.get(name)
    if gate is None:
        try:
            limit = retry(lambda: _shared_client().read_global_concurrency_limit_by_name(name).limit,
                          attempts=8, retry_on=(PrefectHTTPStatusError,), give_up=lambda exc: not is_unavailable(exc),
                          backoff=Backoff(first=0.1, factor=2.0, cap=MAX_POLL_SECONDS), sleep=time.sleep)
        except ObjectNotFound:  # the server will not enforce it either
            return None
        with _lock:
            gate = _gates.setdefault(name, Gate(max(1, limit)))
    return gate


def server_database(client) -> str:
    """``postgresql`` or ``sqlite``: the database behind the Prefect server, from its
    settings (``server.database.driver``; the connection URL itself comes back
    obfuscated). ``unknown`` when the server does not say."""
    try:
        resp = client.request("GET", "/admin/settings")
        db = ((resp.json().get("server") or {}).get("database") or {})
    except Exception:  # noqa: BLE001 - an older or locked-down server: assume the cautious mode
        return "unknown"
    driver = str(db.get("driver") or db.get("connection_url") or "")
    if driver.startswith("postgresql"):
        return "postgresql"
    if driver.startswith("sqlite"):
        return "sqlite"
    return "unknown"


def parallel_writes() -> bool:
    """Whether slot writes of this process may overlap: only on a PostgreSQL server."""
    global _parallel
    if _parallel is None:
        _parallel = server_database(_shared_client()) == "postgresql"
    return _parallel


@contextmanager
def _on_wire() -> Iterator[None]:
    """Slot writes (take, renew, release) of this process go one at a time unless the
    server runs on PostgreSQL (asked once, see :func:`parallel_writes`). A SQLite-backed
    server makes a second concurrent write wait for its database lock: measured 2.1 s
    instead of 0.03 s. PostgreSQL has no such lock. Hand-offs inside the process keep
    these writes few either way."""
    if parallel_writes():
        yield
    else:
        with _wire:
            yield


def _held_elsewhere(exc: httpx.HTTPError) -> bool:
    return isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 423


def _increment(client, names: list[str], lease_seconds: float) -> str | None:
    """Take one slot of each limit on the server, waiting as long as it takes; returns
    the lease id. A server that is down or busy (a 5xx: measured at 1,000 nodes, its
    database pool runs dry for moments) is asked again with backoff for
    ``orchestrator.OUTAGE_S``, then the step fails with OrchestratorUnavailable."""
    def take():
        with _on_wire():
            return client.increment_concurrency_slots_with_lease(names, 1, "concurrency", lease_seconds)
    polls = 0
    while True:
        try:
            resp = through_outage(take, f"taking a slot of {', '.join(names)}", passes=_held_elsewhere)
            return resp.json().get("lease_id")
        except PrefectHTTPStatusError as exc:
            # 423: the slots are held elsewhere. If this process is still giving slots
            # back in the background, the server is only behind: wait for those
            # releases, then ask again. Otherwise another flow run holds them: poll.
            with _lock:
                ours = list(_pending)
            if ours:
                wait(ours, timeout=MAX_POLL_SECONDS, return_when=FIRST_COMPLETED)
                continue
            polls += 1
            asked = float(exc.response.headers.get("Retry-After", MAX_POLL_SECONDS))
            pause = 0.025 * 2 ** polls if polls <= 3 else min(asked, MAX_POLL_SECONDS)
            time.sleep(pause * random.uniform(0.5, 1.0))  # noqa: S311  (jitter, not a secret)


def _release(client, lease_id: str) -> None:
    def release() -> None:
        try:
            with _on_wire():
                client.release_concurrency_slots_with_lease(lease_id)
        except PrefectHTTPStatusError as exc:
            if exc.response.status_code != 404:  # 404: expired already, nothing to give back
                raise
    try:
        retry(release, attempts=8, retry_on=(PrefectHTTPStatusError,), give_up=lambda exc: not is_unavailable(exc),
              backoff=Backoff(first=0.05, factor=2.0, cap=float("inf")), sleep=time.sleep)
    except PrefectHTTPStatusError as exc:
        if not is_unavailable(exc):
            raise
        # still busy: the lease expires by itself after LEASE_SECONDS


def _forget(fut: Future) -> None:
    with _lock:
        _pending.discard(fut)


def drain_releases(timeout: float = 30.0) -> bool:
    """Wait until every slot this process let go of is back on the server; False if some
    release was still on its way after ``timeout`` (tests, and the end of a flow run)."""
    with _lock:
        pending = list(_pending)
    _done, not_done = wait(pending, timeout=timeout)
    return not not_done


@contextmanager
def slot(names: str | list[str], *, priority: int = 0, order: int = 0,
         lease_seconds: float = LEASE_SECONDS) -> Iterator[None]:
    """Hold one slot of every named limit for the duration of the block, waiting as long
    as it takes. Limits that do not exist are ignored, as the server ignores them.

    Waiters in this process queue by ``priority`` (higher first: a node further along
    should not wait behind new nodes for a BMC session), then by ``order`` (lower first:
    the run's node order, so installs follow the rack round-robin however the earlier
    steps finished), then by arrival. Gates are taken narrowest first
    (then by name: one order for everyone, so no deadlock); a task holding a scarce
    install permit never queues for it behind a wide limit.

    A holder that finishes while a task of this process waits for the same limits hands
    it its permits *and* its server lease: the slot changes hands without a round trip
    to the server (under load each took 0.1-4 s, measured at 256 nodes, and kept OS
    install slots idle). Other flow runs see this run's slots taken until its queue for
    those limits is empty, as they would with a re-request: one already queued here
    asks at once, a poller elsewhere only every few seconds."""
    names = sorted({names} if isinstance(names, str) else set(names))
    key = tuple(names)
    found = sorted(((g, n) for n in names if (g := _gate(n)) is not None), key=lambda gn: (gn[0].size, gn[1]))
    if not found:  # no such limits here: the server ignores them too
        yield
        return
    first, *rest = [g for g, _n in found]
    lease = first.acquire(priority, order, key)
    if lease is None:  # a plain permit: take the others, then the server's slots
        taken = [first]
        try:
            for g in rest:
                g.acquire(priority, order)
                taken.append(g)
            lease = _Lease(_shared_client(), names, lease_seconds)
        except BaseException:
            for g in reversed(taken):
                g.release()
            raise
    try:
        yield
    finally:
        if not first.release(key, lease):
            for g in reversed(rest):
                g.release()
            lease.give_back()
