"""At most ``netbox_max_inflight`` requests of a process are at NetBox at once
(bringup.netbox.http_retry): the rest wait their turn on our side, never past ``QUEUE_S``,
and a request that got no turn is a transient NetBox error that names the endpoint."""

from __future__ import annotations

import threading
import time

import pytest
import requests

from bringup.errors import NetBoxUnavailable
from bringup.netbox import http_retry
from bringup.netbox.adapter import NetBox, connect
from bringup.settings import Settings


def _fake_sends(monkeypatch, hold_s: float):
    """requests.Session.request replaced: each send takes ``hold_s``; the most at once is kept."""
    now, most, lock = [0], [0], threading.Lock()

    def send(self, method, url, **kw):
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(hold_s)
        with lock:
            now[0] -= 1
        answer = requests.Response()
        answer.status_code = 200
        return answer
    monkeypatch.setattr(requests.Session, "request", send)
    return most


def _at_once(api, n: int, url: str) -> list[BaseException]:
    errors: list[BaseException] = []

    def one():
        try:
            api.http_session.request("GET", url)
        except BaseException as exc:  # noqa: BLE001 - the test reads them
            errors.append(exc)
    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_no_more_than_the_bound_are_in_flight_and_the_rest_wait(monkeypatch):
    most = _fake_sends(monkeypatch, 0.05)
    api = connect("http://nb-turns-a.invalid", "nbt_x.y", inflight=3)
    assert _at_once(api, 12, "http://nb-turns-a.invalid/api/dcim/devices/") == []
    assert most[0] == 3


def test_the_bound_is_the_processes_for_each_netbox(monkeypatch):
    most = _fake_sends(monkeypatch, 0.05)
    one = connect("http://nb-turns-b.invalid", "nbt_x.y", inflight=2)
    two = connect("http://nb-turns-b.invalid/", "nbt_x.y", inflight=2)
    errors: list[BaseException] = []
    threads = [threading.Thread(target=lambda api=api: errors.extend(_at_once(api, 4, "http://nb-turns-b.invalid/api/")))
               for api in (one, two)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and most[0] == 2
    assert http_retry.turns("http://nb-turns-b.invalid", 2) is http_retry.turns("http://nb-turns-b.invalid/", 2)


def test_a_request_without_a_turn_in_time_is_netbox_busy_and_transient(monkeypatch):
    _fake_sends(monkeypatch, 0.0)
    api = connect("http://nb-turns-c.invalid", "nbt_x.y", inflight=1, queue_s=0.05)
    taken = http_retry.turns("http://nb-turns-c.invalid", 1)
    assert taken.acquire(timeout=1)
    try:
        with pytest.raises(http_retry.Busy, match=r"no turn for GET dcim/devices/\{id\}/ in 0 s"):
            api.http_session.request("GET", "http://nb-turns-c.invalid/api/dcim/devices/7/")
        with pytest.raises(NetBoxUnavailable, match="NetBox is busy") as err:
            NetBox(api).get_object("dcim.devices", name="n1")
        assert err.value.transient and "netbox_max_inflight" in err.value.hint
    finally:
        taken.release()
    # the turn given back, the same call goes through
    api.http_session.request("GET", "http://nb-turns-c.invalid/api/dcim/devices/7/")


def test_a_slow_request_is_logged_with_its_endpoint(monkeypatch, caplog):
    _fake_sends(monkeypatch, 0.0)
    monkeypatch.setattr(http_retry, "SLOW_S", -1.0)
    api = connect("http://nb-turns-d.invalid", "nbt_x.y")
    with caplog.at_level("WARNING", logger="bringup.netbox.http_retry"):
        api.http_session.request("PATCH", "http://nb-turns-d.invalid/api/dcim/devices/12/")
    assert "to answer PATCH dcim/devices/{id}/" in caplog.text


def test_the_bound_is_a_setting_of_at_least_one():
    base = {"site": "s", "netbox_url": "http://nb", "netbox_token_file": "/dev/null"}
    assert Settings(**base).netbox_max_inflight == http_retry.MAX_INFLIGHT
    assert Settings(**base, netbox_max_inflight=12).netbox_max_inflight == 12
    with pytest.raises(ValueError):
        Settings(**base, netbox_max_inflight=0)
    with pytest.raises(ValueError, match="at least 1"):
        connect("http://nb-turns-e.invalid", "nbt_x.y", inflight=0)
