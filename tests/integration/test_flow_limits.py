"""Global concurrency limits: a full limit makes callers wait their turn, never fail."""

import os
import threading
import time

import pytest

pytestmark = pytest.mark.integration


def test_slot_never_lets_more_holders_in_than_the_limit(prefect_server, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", prefect_server.api_url)
    from flows import limits
    monkeypatch.setattr(limits, "_client", None)
    monkeypatch.setattr(limits, "_gates", {})
    name = f"test-limit-{os.getpid()}"
    limits.ensure_limits({name: 2})
    holders, peak, lock = [0], [0], threading.Lock()

    def work():
        with limits.slot(name):
            with lock:
                holders[0] += 1
                peak[0] = max(peak[0], holders[0])
            time.sleep(0.2)
            with lock:
                holders[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    t = time.monotonic()
    [th.start() for th in threads]
    [th.join() for th in threads]
    took = time.monotonic() - t
    assert peak[0] == 2          # the limit held
    assert took >= 0.8           # 8 holders of 0.2 s, two at a time: at least 4 waves
    # all slots were given back (releases travel in the background: wait for them)
    assert limits.drain_releases(30)
    from prefect.client.orchestration import get_client
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name(name).active_slots == 0


def test_missing_limit_does_not_block(prefect_server, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", prefect_server.api_url)
    from flows import limits
    monkeypatch.setattr(limits, "_client", None)
    monkeypatch.setattr(limits, "_gates", {})
    with limits.slot("no-such-limit-anywhere"):
        pass


def test_rack_limits_are_created_once_and_keep_an_operator_set_size(prefect_server, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", prefect_server.api_url)
    from prefect.client.orchestration import get_client

    from flows import limits
    racks = [f"t{os.getpid()}a", f"t{os.getpid()}b"]
    assert limits.ensure_rack_limits(racks + racks[:1]) == [limits.burnin_limit(r) for r in sorted(racks)]
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name(limits.burnin_limit(racks[0])).limit \
            == limits.BURNIN_PER_RACK
        client.upsert_global_concurrency_limit_by_name(limits.burnin_limit(racks[0]), 7)  # an operator resizes it
    assert limits.ensure_rack_limits(racks) == []
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name(limits.burnin_limit(racks[0])).limit == 7
