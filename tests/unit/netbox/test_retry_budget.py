"""NetBox's one retry budget (bringup.netbox.http_retry): the numbers each layer uses come
from it, and the worst case it names is what one call can really take."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import requests
from urllib3.exceptions import NewConnectionError

from bringup.errors import NetBoxUnavailable
from bringup.netbox import http_retry as budget
from bringup.netbox.adapter import connect
from bringup.netbox.records import NetBoxRecords


def test_the_worst_case_is_the_timeouts_times_the_tries_plus_the_pauses():
    assert budget.HTTP_PAUSES_S == (0.0, 1.0, 2.0)
    tries = 1 + budget.HTTP_RETRIES
    assert budget.SENDS_WORST_S == tries * (budget.CONNECT_TIMEOUT_S + budget.READ_TIMEOUT_S) + 3.0 == 143.0
    # a call waits for its turn once (the turn is held through urllib3's sends again)
    assert budget.CALL_WORST_S == budget.QUEUE_S + budget.SENDS_WORST_S == 173.0
    assert budget.WORST_CASE_S == budget.OUTAGE_S + budget.CALL_WORST_S == 293.0
    assert budget.worst_case_s(30.0) == 30.0 + budget.CALL_WORST_S


def test_the_pauses_named_are_the_ones_urllib3_makes():
    r = budget.retry_policy()
    made = []
    for _ in range(budget.HTTP_RETRIES):
        r = r.increment("GET", "/api/", error=NewConnectionError(None, "Connection refused"))
        made.append(r.get_backoff_time())
    assert tuple(made) == budget.HTTP_PAUSES_S


def test_a_retry_after_header_cannot_stretch_the_budget():
    assert budget.retry_policy().respect_retry_after_header is False


def test_the_session_sends_with_the_budgets_timeouts(monkeypatch):
    sent = {}
    monkeypatch.setattr(requests.Session, "request", lambda self, method, url, **kw: sent.update(kw))
    api = connect("http://netbox.invalid", "nbt_x.y")
    api.http_session.request("GET", "http://netbox.invalid/api/")
    assert sent["timeout"] == (budget.CONNECT_TIMEOUT_S, budget.READ_TIMEOUT_S)
    adapter = api.http_session.get_adapter("http://netbox.invalid/")
    assert adapter.max_retries.total == budget.HTTP_RETRIES


def _timed_records(call):
    now, pauses = [0.0], []
    ctx = SimpleNamespace(settings=SimpleNamespace(), netbox=SimpleNamespace(journal=lambda *a, **kw: call(now)))
    rec = NetBoxRecords(ctx, sleep=lambda s: (pauses.append(s), now.__setitem__(0, now[0] + s)),
                        clock=lambda: now[0])
    return rec, now, pauses


def test_one_records_call_against_a_dead_netbox_ends_within_the_worst_case():
    """The worst a records call can meet: NetBox refuses at once for the whole outage wait,
    then the last try (started as the wait runs out) hangs for the HTTP layer's worst. That
    ends at WORST_CASE_S exactly, never later."""
    def refused_then_hung(now):
        if now[0] >= budget.OUTAGE_S:
            now[0] += budget.CALL_WORST_S
        raise NetBoxUnavailable("NetBox is down")
    rec, now, _ = _timed_records(refused_then_hung)
    assert rec.outage_s == budget.OUTAGE_S        # no setting: the budget's
    with pytest.raises(NetBoxUnavailable):
        rec.journal(SimpleNamespace(id=1), "text")
    assert now[0] == budget.WORST_CASE_S

    def hung(now):                                # every try hangs: fewer tries, still within it
        now[0] += budget.CALL_WORST_S
        raise NetBoxUnavailable("NetBox did not answer in time")
    rec, now, _ = _timed_records(hung)
    with pytest.raises(NetBoxUnavailable):
        rec.journal(SimpleNamespace(id=1), "text")
    assert budget.CALL_WORST_S <= now[0] <= budget.WORST_CASE_S


def test_the_records_pauses_follow_the_budget():
    def refused(now):
        raise NetBoxUnavailable("cannot reach NetBox: ConnectionError")
    rec, now, pauses = _timed_records(refused)
    with pytest.raises(NetBoxUnavailable):
        rec.journal(SimpleNamespace(id=1), "text")
    expected = [p for p, _ in zip(budget.OUTAGE_BACKOFF.pauses(), range(5), strict=False)]
    assert pauses[:5] == expected == [1.0, 2.0, 4.0, 8.0, 15.0]
    assert sum(pauses) == now[0] == budget.OUTAGE_S   # the last pause cut to what was left
