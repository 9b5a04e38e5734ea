"""The one way bringup waits and tries again: :func:`poll` (ask until an answer comes or a
deadline passes) and :func:`retry` (call again on the errors a caller names, a fixed
number of times, with growing pauses).

Every wait in the library goes through here, so a deadline means the same everywhere:
it bounds the whole wait, never one attempt, and the last pause is cut to what is left
(a step's deadline of 300 s is 300 s, not 300 s per retry). Clock and sleep are
parameters, so unit tests run a wait of minutes in no time.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Pauses between tries: ``first`` seconds, times ``factor`` after each try, at most
    ``cap``; ``jitter`` (0..1) takes up to that share off each pause at random, so many
    callers started together do not try again in step."""

    first: float = 0.5
    factor: float = 2.0
    cap: float = 30.0
    jitter: float = 0.0

    def pauses(self) -> Iterable[float]:
        pause = self.first
        while True:
            yield pause * (1 - self.jitter * random.random()) if self.jitter else pause  # noqa: S311  (jitter, not a secret)
            pause = min(pause * self.factor, self.cap)


class Timeout(Exception):
    """Raised by :func:`poll` when no answer came before the deadline (callers usually
    catch it and raise their own error, which says what to do)."""

    def __init__(self, what: str, waited: float, last: object = None) -> None:
        super().__init__(f"{what}: no answer in {waited:.0f} s" + (f" (last: {last})" if last is not None else ""))
        self.what, self.waited, self.last = what, waited, last


def poll(ask: Callable[[], T | None], *, timeout: float, what: str, backoff: Backoff = Backoff(),
         sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
         done: Callable[[T | None], bool] | None = None, on_error: tuple[type[BaseException], ...] = ()) -> T:
    """Call ``ask`` until its answer is done (not ``None``, or ``done(answer)``), and return
    that answer; :class:`Timeout` once ``timeout`` seconds have passed. ``ask`` is called at
    least once, and once more right at the deadline. Errors in ``on_error`` count as "no
    answer yet" (the last one is in :attr:`Timeout.last`); any other error ends the wait."""
    is_done = done or (lambda answer: answer is not None)
    start = clock()
    deadline = start + timeout
    last: object = None
    pauses = iter(backoff.pauses())
    while True:
        try:
            answer = ask()
            if is_done(answer):
                return answer  # type: ignore[return-value]
            last = answer
        except on_error as exc:
            last = exc
        left = deadline - clock()
        if left <= 0:
            raise Timeout(what, clock() - start, last)
        sleep(min(next(pauses), left))


def retry(call: Callable[[], T], *, attempts: int, retry_on: tuple[type[BaseException], ...],
          backoff: Backoff = Backoff(), deadline: float | None = None,
          sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
          give_up: Callable[[BaseException], bool] = lambda exc: False) -> T:
    """``call()``, tried up to ``attempts`` times while it raises one of ``retry_on`` (and
    ``give_up(exc)`` is false); the last error is raised as it is. With ``deadline``
    (seconds), no try starts after it has passed."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    end = None if deadline is None else clock() + deadline
    pauses = iter(backoff.pauses())
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except retry_on as exc:
            if attempt == attempts or give_up(exc):
                raise
            pause = next(pauses)
            if end is not None:
                left = end - clock()
                if left <= 0:
                    raise
                pause = min(pause, left)
            sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["Backoff", "Timeout", "poll", "retry"]
