"""The lab's and the tests' fixed listen ports stay out of Linux's ephemeral range and
never coincide: a fixed port inside 32768-60999 can be held by the local end of a client
connection when its server starts (a CI run lost its BMC simulator to that)."""

from __future__ import annotations

import ports

from lab import paths
from lab.kubeapi.server import make_server

LAB_PORTS = {"postgresql": paths.PG_PORT, "redis": paths.REDIS_PORT, "netbox": paths.NETBOX_PORT,
             "prefect": paths.PREFECT_PORT, "kubeapi": paths.KUBE_PORT, "seeds": paths.SEED_PORT}
MAX_SLOT = len(ports._REDIS_PAIRS) - 1


def _test_ports(monkeypatch) -> dict[str, int]:
    """Every port the tests listen on, for every xdist slot they support."""
    found = {}
    for slot in range(MAX_SLOT + 1):
        monkeypatch.setattr(ports, "SLOT", slot)
        for role in ports.NETBOX_ROLES:
            found[f"netbox-{role}@{slot}"] = ports.netbox_port(role)
        found[f"prefect@{slot}"] = ports.PREFECT_BASE + slot
        found[f"workload-kube@{slot}"] = ports.workload_kube_port()
    for name, fp in ports.FLEETS.items():
        found[f"{name}-kube"] = int(fp.kube_listen.rsplit(":", 1)[1])
        found[f"{name}-seeds"] = int(fp.seed_listen.rsplit(":", 1)[1])
    return found


def test_the_lab_ports_are_below_the_ephemeral_range():
    for name, port in LAB_PORTS.items():
        assert 1024 < port < paths.EPHEMERAL_LOW, f"{name} listens on {port}, inside the ephemeral range"
    assert make_server.__defaults__ is not None and paths.KUBE_PORT in make_server.__defaults__


def test_the_test_ports_are_below_the_ephemeral_range_and_distinct(monkeypatch):
    found = _test_ports(monkeypatch)
    for name, port in found.items():
        assert 1024 < port < paths.EPHEMERAL_LOW, f"{name} listens on {port}, inside the ephemeral range"
    everything = {**found, **LAB_PORTS}
    seen: dict[int, str] = {}
    for name, port in everything.items():
        assert port not in seen, f"{name} and {seen[port]} both listen on {port}"
        seen[port] = name

