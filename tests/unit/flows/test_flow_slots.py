"""flows.limits: the in-process queue (Gate) in front of each global concurrency limit, and
slot() handing leases on inside the process."""

import threading
import time

import pytest

from flows.limits import Gate


def _queue_up(gate: Gate, priorities: list[int]) -> list[int]:
    """Hold the only permit, queue one thread per priority (in this order), let go, and
    return the order in which the waiters got through."""
    gate.acquire()
    order, lock = [], threading.Lock()

    def wait(p: int) -> None:
        gate.acquire(p)
        with lock:
            order.append(p)
        gate.release()

    threads = []
    for p in priorities:
        th = threading.Thread(target=wait, args=(p,))
        th.start()
        threads.append(th)
        while gate.waiting < len(threads):  # queued in exactly this order
            time.sleep(0.001)
    gate.release()
    for th in threads:
        th.join(5)
    return order


def test_higher_priority_first_then_first_come_first_served():
    assert _queue_up(Gate(1), [1, 3, 2, 3, 1]) == [3, 3, 2, 1, 1]


def test_equal_priority_is_first_come_first_served():
    gate = Gate(1)
    gate.acquire()
    order, threads = [], []
    for i in range(6):
        th = threading.Thread(target=lambda i=i: (gate.acquire(), order.append(i), gate.release()))
        th.start()
        threads.append(th)
        while gate.waiting < i + 1:
            time.sleep(0.001)
    gate.release()
    [th.join(5) for th in threads]
    assert order == list(range(6))


def test_never_more_holders_than_permits_and_no_overtaking():
    gate, holders, peak, lock = Gate(3), [0], [0], threading.Lock()

    def work() -> None:
        for _ in range(20):
            gate.acquire()
            with lock:
                holders[0] += 1
                peak[0] = max(peak[0], holders[0])
            time.sleep(0.0005)
            with lock:
                holders[0] -= 1
            gate.release()

    threads = [threading.Thread(target=work) for _ in range(10)]
    [th.start() for th in threads]
    [th.join(30) for th in threads]
    assert peak[0] == 3 and holders[0] == 0
    assert gate.free == 3 and gate.waiting == 0


def test_a_free_permit_is_not_taken_past_a_queued_waiter():
    # the released permit belongs to the waiter already: a newcomer must queue
    gate = Gate(1)
    gate.acquire()
    got = threading.Event()
    waiter = threading.Thread(target=lambda: (gate.acquire(), got.set()))
    waiter.start()
    while gate.waiting < 1:
        time.sleep(0.001)
    gate.release()
    assert gate.free == 0
    waiter.join(5)
    assert got.is_set()


def test_over_release_and_empty_gate_are_errors():
    gate = Gate(2)
    with pytest.raises(RuntimeError, match="more often than acquired"):
        gate.release()
    with pytest.raises(ValueError, match="at least one permit"):
        Gate(0)


class _Resp:
    def __init__(self, doc: dict) -> None:
        self._doc = doc

    def json(self) -> dict:
        return self._doc


def _refuse(status: int):
    import httpx
    from prefect.exceptions import PrefectHTTPStatusError
    request = httpx.Request("POST", "http://prefect.invalid/api/v2/concurrency_limits/increment-with-lease")
    response = httpx.Response(status, headers={"Retry-After": "0.05"}, request=request)
    raise PrefectHTTPStatusError.from_httpx_error(
        httpx.HTTPStatusError("refused", request=request, response=response))


class _Server:
    """Just enough of the Prefect client for slot(): limits, leases (423 when a limit is
    full, like the server), and a record of the writes (the real server is in
    tests/integration/test_flow_limits.py)."""

    def __init__(self, limits: dict[str, int]) -> None:
        self.limits = limits
        self.active: dict[str, list[str]] = {}
        self.writes: list[str] = []
        self.peak: dict[str, int] = {}
        self.refused = 0
        self._lock = threading.Lock()

    def read_global_concurrency_limit_by_name(self, name):
        from prefect.exceptions import ObjectNotFound
        if name not in self.limits:
            raise ObjectNotFound(http_exc=Exception(name))
        return type("Limit", (), {"limit": self.limits[name]})

    def increment_concurrency_slots_with_lease(self, names, slots, mode, lease_seconds):
        with self._lock:
            for n in names:
                if sum(1 for held in self.active.values() if n in held) >= self.limits.get(n, 10**9):
                    self.refused += 1
                    return _refuse(423)
            lease = f"lease-{len(self.writes)}"
            self.active[lease] = list(names)
            self.writes.append("take")
            for n in names:
                self.peak[n] = max(self.peak.get(n, 0), sum(1 for h in self.active.values() if n in h))
            return _Resp({"lease_id": lease})

    def renew_concurrency_lease(self, lease_id, lease_seconds):
        pass

    def release_concurrency_slots_with_lease(self, lease_id):
        with self._lock:
            del self.active[lease_id]
            self.writes.append("release")


@pytest.fixture
def server(monkeypatch):
    from flows import limits
    srv = _Server({"narrow": 1, "wide": 3, "pair": 2})
    monkeypatch.setattr(limits, "_client", srv)
    monkeypatch.setattr(limits, "_gates", {})
    return srv


def _crowd(names, holders: int, hold: float = 0.02, priority=lambda i: 0) -> list[int]:
    from flows import limits
    entered, lock = [], threading.Lock()

    def work(i: int) -> None:
        with limits.slot(names, priority=priority(i)):
            with lock:
                entered.append(i)
            time.sleep(hold)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(holders)]
    [th.start() for th in threads]
    [th.join(30) for th in threads]
    assert limits.drain_releases(10)
    return entered


def test_slots_change_hands_without_a_server_round_trip(server):
    entered = _crowd("pair", 12)
    assert len(entered) == 12
    assert server.peak["pair"] == 2
    # 12 holders of a 2-slot limit: two leases taken, handed on in the process, given back
    assert server.writes.count("take") == server.writes.count("release")
    assert server.writes.count("take") < 12
    assert server.active == {}


def test_a_lease_only_changes_hands_between_holders_of_the_same_limits(server):
    from flows import limits
    done = []

    def both():
        with limits.slot(["wide", "narrow"]):
            time.sleep(0.01)
        done.append("both")

    def wide_only():
        with limits.slot("wide"):
            time.sleep(0.01)
        done.append("wide")

    threads = [threading.Thread(target=f) for f in (both, wide_only) * 6]
    [th.start() for th in threads]
    [th.join(30) for th in threads]
    assert limits.drain_releases(10)
    assert sorted(done) == sorted(["both", "wide"] * 6)
    assert server.peak["narrow"] == 1 and server.peak["wide"] <= 3
    assert server.active == {}
    assert all(g.free == g.size for g in limits._gates.values())


def test_a_missing_limit_is_not_enforced_and_costs_no_write(server):
    from flows import limits
    with limits.slot("no-such-limit"):
        pass
    assert server.writes == []
    assert "no-such-limit" not in limits._gates
