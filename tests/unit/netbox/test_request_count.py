"""NetBox requests counted where they leave (bringup.netbox.request_count, issue #25): one
row per kind of request (ids folded, the query left out), a run's figure the difference of
two snapshots, per node, and the adapter's session counting each request it sends."""

from __future__ import annotations

from collections import Counter
from threading import Thread

import pytest

from bringup.netbox import request_count as rc
from bringup.netbox.http_retry import connect


@pytest.mark.parametrize(("url", "want"), [
    ("http://nb:8000/api/dcim/devices/?site=a&limit=0", "dcim/devices/"),
    ("http://nb:8000/api/dcim/devices/42/", "dcim/devices/{id}/"),
    ("http://nb:8000/api/extras/journal-entries/", "extras/journal-entries/"),
    ("http://nb:8000/graphql/", "graphql/"),
    ("https://nb.example/netbox/api/dcim/interfaces/7/", "dcim/interfaces/{id}/"),
    ("http://nb:8000/api/core/object-changes/?changed_object_id=12", "core/object-changes/"),
])
def test_endpoints_fold_ids_and_drop_the_query(url, want):
    assert rc.endpoint(url) == want


def test_a_runs_figure_is_what_was_sent_since_its_snapshot_from_any_thread():
    count = rc.RequestCount()
    count.record("get", "http://nb/api/dcim/devices/1/")
    before = count.snapshot()
    threads = [Thread(target=lambda: [count.record("PATCH", f"http://nb/api/dcim/devices/{i}/") for i in range(100)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    count.record("POST", "http://nb/api/extras/journal-entries/")
    got = rc.since(before, count.snapshot())
    assert got == Counter({("PATCH", "dcim/devices/{id}/"): 400, ("POST", "extras/journal-entries/"): 1})


def test_the_table_and_the_line_say_per_node():
    counts = Counter({("GET", "dcim/devices/"): 30, ("PATCH", "dcim/devices/{id}/"): 50,
                      ("POST", "extras/journal-entries/"): 20})
    assert rc.rows(counts, 10)[0] == {"method": "PATCH", "endpoint": "dcim/devices/{id}/", "requests": 50,
                                      "per node": 5.0}
    assert rc.summary(counts, 10) == "100 NetBox request(s) for 10 node(s) (10.0 a node): PATCH 50, GET 30, POST 20"
    assert rc.summary(Counter(), 0) == "0 NetBox request(s) for 0 node(s)"


def test_the_adapters_session_counts_each_request_it_sends(monkeypatch):
    import requests
    sent = []
    # the transport below the counting: no socket (unit tests touch none)
    monkeypatch.setattr(requests.Session, "request", lambda self, method, url, **kw: sent.append((method, url)))
    api = connect("http://netbox.invalid:8000", "token")
    before = rc.COUNT.snapshot()
    api.http_session.request("GET", "http://netbox.invalid:8000/api/dcim/devices/5/")
    assert rc.since(before) == Counter({("GET", "dcim/devices/{id}/"): 1}) and len(sent) == 1
