"""A monotonic clock that only moves when slept on: ``clock()`` is now, ``clock.sleep(s)``
records the pause and moves on (a negative pause is a bug of the code under test)."""

from __future__ import annotations


class Clock:
    def __init__(self) -> None:
        self.now, self.sleeps = 0.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        assert s >= 0, f"asked to sleep {s} s"
        self.sleeps.append(s)
        self.now += s
