"""Two runs started at once on a fresh Prefect server both find a rack's burn-in limit
missing and both create it: the second create's 409 means the limit is there, so the
run goes on (it failed before, the run's process exiting before any node was walked)."""

from __future__ import annotations

from types import SimpleNamespace

from prefect.exceptions import ObjectAlreadyExists

from flows import limits


class RacingClient:
    """A server where another run creates ``raced`` between our listing and our create."""

    def __init__(self, raced: set[str]):
        self.raced, self.sizes, self.calls = raced, {}, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read_global_concurrency_limits(self, limit, offset):
        return [SimpleNamespace(name=n, limit=v) for n, v in self.sizes.items()][offset:offset + limit]

    def upsert_global_concurrency_limit_by_name(self, name, limit):
        self.calls.append((name, limit))
        if name in self.raced:
            self.raced.discard(name)
            self.sizes[name] = 2
            raise ObjectAlreadyExists(http_exc=RuntimeError("409 Conflict"))
        self.sizes[name] = limit


def test_a_limit_the_other_run_created_first_is_left_as_it_made_it(monkeypatch):
    client = RacingClient({"burnin-rack-r01"})
    monkeypatch.setattr(limits, "get_client", lambda sync_client: client)
    assert limits.ensure_rack_limits(["r01", "r02", "r01"]) == ["burnin-rack-r02"]
    assert client.sizes == {"burnin-rack-r01": 2, "burnin-rack-r02": 2}
    assert client.calls == [("burnin-rack-r01", 2), ("burnin-rack-r02", 2)]


def test_a_resize_that_raced_a_create_is_applied_after_it(monkeypatch):
    client = RacingClient({"os-installs"})
    monkeypatch.setattr(limits, "get_client", lambda sync_client: client)
    assert limits.ensure_limits({"os-installs": 1}) == []
    assert client.sizes == {"os-installs": 1}
    assert client.calls == [("os-installs", 1), ("os-installs", 1)]
