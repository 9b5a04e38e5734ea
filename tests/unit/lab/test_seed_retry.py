"""lab.seed.seed runs the whole (idempotent) seed again after a transient NetBox error."""

from __future__ import annotations

import pytest

from bringup.errors import NetBoxNotFound, NetBoxUnavailable
from lab import seed as seed_mod


def _flaky(failures: list[Exception]):
    calls = []

    def once(nb, fleet, skus):
        calls.append(fleet)
        if failures:
            raise failures.pop(0)
        return "report"
    return once, calls


class _Fleet:
    site = "t"


def test_a_timeout_is_seeded_again_and_the_report_is_the_last_tries(monkeypatch):
    once, calls = _flaky([NetBoxUnavailable("NetBox did not answer in time")])
    monkeypatch.setattr(seed_mod, "_seed_once", once)
    slept = []
    assert seed_mod.seed(None, _Fleet(), {}, sleep=slept.append) == "report"
    assert len(calls) == 2 and slept == [5.0]


def test_after_the_last_pause_the_error_is_raised(monkeypatch):
    once, calls = _flaky([NetBoxUnavailable("1"), NetBoxUnavailable("2"), NetBoxUnavailable("3")])
    monkeypatch.setattr(seed_mod, "_seed_once", once)
    slept = []
    with pytest.raises(NetBoxUnavailable, match="3"):
        seed_mod.seed(None, _Fleet(), {}, sleep=slept.append)
    assert len(calls) == 3 and slept == [5.0, 15.0]


def test_a_permanent_error_is_not_tried_again(monkeypatch):
    once, calls = _flaky([NetBoxNotFound("no device role")])
    monkeypatch.setattr(seed_mod, "_seed_once", once)
    with pytest.raises(NetBoxNotFound):
        seed_mod.seed(None, _Fleet(), {}, sleep=lambda s: pytest.fail("slept"))
    assert len(calls) == 1
