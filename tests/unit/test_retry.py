"""bringup.retry: a deadline bounds the whole wait; retries stop at the count or the deadline."""

from __future__ import annotations

import pytest

from bringup.retry import Backoff, Timeout, poll, retry


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_poll_returns_the_first_answer():
    c = Clock()
    answers = iter([None, None, "up"])
    assert poll(lambda: next(answers), timeout=10, what="x", sleep=c.sleep, clock=c) == "up"
    assert c.slept == [0.5, 1.0]


def test_poll_deadline_bounds_the_whole_wait_and_asks_at_the_deadline():
    c = Clock()
    calls = []

    def ask():
        calls.append(c.now)
        return

    with pytest.raises(Timeout, match="sshd: no answer in 10 s"):
        poll(ask, timeout=10, what="sshd", backoff=Backoff(first=4, factor=1), sleep=c.sleep, clock=c)
    assert c.now == 10
    assert calls == [0, 4, 8, 10]


def test_poll_counts_named_errors_as_no_answer_and_keeps_the_last():
    c = Clock()

    def ask():
        raise ConnectionError("refused")

    with pytest.raises(Timeout) as err:
        poll(ask, timeout=2, what="api", sleep=c.sleep, clock=c, on_error=(ConnectionError,))
    assert isinstance(err.value.last, ConnectionError)


def test_poll_other_errors_end_the_wait():
    c = Clock()
    with pytest.raises(KeyError):
        poll(lambda: {}["x"], timeout=5, what="x", sleep=c.sleep, clock=c, on_error=(ConnectionError,))


def test_poll_with_a_done_predicate():
    c = Clock()
    states = iter(["Pending", "Running", "Completed"])
    assert poll(lambda: next(states), timeout=10, what="task", done=lambda s: s == "Completed",
                sleep=c.sleep, clock=c) == "Completed"


def test_retry_tries_the_count_then_raises_the_last_error():
    c = Clock()
    tries = []

    def call():
        tries.append(1)
        raise TimeoutError(len(tries))

    with pytest.raises(TimeoutError, match="3"):
        retry(call, attempts=3, retry_on=(TimeoutError,), sleep=c.sleep, clock=c)
    assert len(tries) == 3 and c.slept == [0.5, 1.0]


def test_retry_stops_at_the_deadline_and_on_give_up():
    c = Clock()
    tries = []

    def call():
        tries.append(1)
        raise TimeoutError()

    with pytest.raises(TimeoutError):
        retry(call, attempts=10, retry_on=(TimeoutError,), backoff=Backoff(first=4, factor=1), deadline=9,
              sleep=c.sleep, clock=c)
    assert c.now == 9 and len(tries) == 4
    tries.clear()
    with pytest.raises(TimeoutError):
        retry(call, attempts=10, retry_on=(TimeoutError,), give_up=lambda e: True, sleep=c.sleep, clock=c)
    assert len(tries) == 1


def test_retry_returns_on_success_and_refuses_zero_attempts():
    answers = iter([OSError(), "ok"])

    def call():
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a

    c = Clock()
    assert retry(call, attempts=2, retry_on=(OSError,), sleep=c.sleep, clock=c) == "ok"
    with pytest.raises(ValueError):
        retry(call, attempts=0, retry_on=(OSError,))
