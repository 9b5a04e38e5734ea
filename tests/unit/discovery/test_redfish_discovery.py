"""discover() without BMCs: per-node isolation of errors, order, serialisation."""

from __future__ import annotations

import json
import threading

import pytest

from bringup.discovery.crawl import discover
from bringup.discovery.verify import ExpectedNode
from bringup.errors import ConfigError
from bringup.sku import load_skus

SKU = load_skus()["hgx-h100-80gb"]


def nodes(n: int) -> list[ExpectedNode]:
    return [ExpectedNode(name=f"n{i}", sku=SKU, bmc_address=f"127.0.0.{i + 1}") for i in range(n)]


def test_credential_errors_are_critical_findings_in_input_order():
    def creds(address: str):
        raise ConfigError(f"no BMC credentials for {address}")

    results = discover(nodes(5), creds, concurrency=2)
    assert [r.name for r in results] == [f"n{i}" for i in range(5)]
    for i, r in enumerate(results):
        assert not r.ok and r.error_kind == "config" and r.inventory is None
        assert [(f.severity, f.code) for f in r.findings] == [("critical", "bmc_config")]
        assert f"127.0.0.{i + 1}" in r.findings[0].message
        doc = r.to_dict()
        assert doc["ok"] is False and json.dumps(doc)
        assert "FAILED" in r.to_markdown()


def test_concurrency_is_bounded():
    active, peak, lock = [0], [0], threading.Lock()
    gate = threading.Barrier(3, timeout=5)

    def creds(address: str):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            gate.wait()          # three workers must be in here together...
        except threading.BrokenBarrierError:
            pass
        with lock:
            active[0] -= 1
        raise ConfigError("stop here")

    discover(nodes(9), creds, concurrency=3)
    assert peak[0] == 3          # ...and never a fourth


def test_an_unexpected_bug_is_still_a_critical_finding():
    def creds(address: str):
        raise KeyError("boom")

    [r] = discover(nodes(1), creds)
    assert r.error_kind == "internal" and not r.ok


def test_bad_concurrency():
    with pytest.raises(ConfigError):
        discover(nodes(1), lambda a: None, concurrency=0)
