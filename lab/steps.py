"""The steps of ``bringup lab prepare`` and ``lab up``, each said as it starts and timed.

A first ``lab prepare`` on a fresh machine takes minutes; whoever waits (a person at a
terminal, a CI log) sees which step runs and how long each one took. ``Steps`` runs and
times them and tells a ``Reporter``; ``PlainLines`` is the reporter for a log (one line as
a step starts, one as it ends); the command line has a rich one for a terminal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, TypeVar

T = TypeVar("T")


class Reporter(Protocol):
    def start(self, step: str) -> None: ...

    def note(self, text: str) -> None:
        """Something worth knowing inside the running step (what it does, why)."""

    def done(self, step: str, seconds: float) -> None: ...

    def failed(self, step: str, seconds: float) -> None: ...


class PlainLines:
    """``lab: <step> ...`` as a step starts, ``lab: <step> ... done in 12.3 s`` as it ends."""

    def __init__(self, write: Callable[[str], None] = lambda line: print(line, flush=True)) -> None:
        self.write = write

    def start(self, step: str) -> None:
        self.write(f"lab: {step} ...")

    def note(self, text: str) -> None:
        self.write(f"lab:   {text}")

    def done(self, step: str, seconds: float) -> None:
        self.write(f"lab: {step} ... done in {seconds:.1f} s")

    def failed(self, step: str, seconds: float) -> None:
        self.write(f"lab: {step} ... FAILED after {seconds:.1f} s")


class Steps:
    """Runs named steps in order, timing each: ``timings`` maps step -> seconds."""

    def __init__(self, report: Reporter | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.report = report or PlainLines()
        self.clock = clock
        self.timings: dict[str, float] = {}

    def run(self, name: str, fn: Callable[[], T]) -> T:
        self.report.start(name)
        t = self.clock()
        try:
            result = fn()
        except BaseException:
            self.report.failed(name, self.clock() - t)
            raise
        self.timings[name] = self.clock() - t
        self.report.done(name, self.timings[name])
        return result
