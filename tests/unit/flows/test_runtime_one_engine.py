"""Walks start side by side on threads and each asks the runtime for its lifecycle: they
must get one engine. Two engines each kept half of a run's leases: a walk whose steps
asked the other one read its node in full at every step, and that engine's fence knew
nothing of the lease's renewals (found by counting a commission's NetBox requests)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from flows import runtime


def test_threads_asking_at_once_get_one_lifecycle(monkeypatch):
    import bringup.context
    import bringup.pipeline
    monkeypatch.setattr(bringup.context.Context, "from_settings", staticmethod(lambda config=None: SimpleNamespace()))
    built = []

    def slow_build(ctx):   # building an engine takes a moment (settings, spool, steps)
        time.sleep(0.05)
        built.append(object())
        return built[-1]
    monkeypatch.setattr(bringup.pipeline, "lifecycle", slow_build)
    rt = runtime.SiteRuntime("site.yaml")
    got, start = [], threading.Barrier(8)

    def ask():
        start.wait()
        got.append(rt.lifecycle())
    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1 and all(g is built[0] for g in got)
