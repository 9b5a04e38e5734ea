"""flows.limits.Gate: the in-process queue in front of each global concurrency limit."""

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
