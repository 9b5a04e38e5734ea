"""The BMC watch against the lab's BMC simulator as its own process, over HTTPS: each
health fault from the fleet profile, and one injected while it runs (the node's
injected.json, as `bringup lab inject` writes it), read by bringup's reader and judged by
the watch's rules. Addresses are this process's own (127.66.<pid>.x), so parallel runs
and the fleet labs never meet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import REPO, Sim, stop, wait_port

from bringup.redfish import connect
from bringup.redfish.health import read_health
from bringup.service.bmc_health import bmc_signals
from bringup.service.health import load_policy

NET = f"127.66.{os.getpid() % 250 + 1}"
NODES = {"ok": "[]", "psu": "[{kind: psu_lost, value: 2}]", "leak": "[{kind: leak}]",
         "sel": "[{kind: sel_entry, value: 'Power supply PSU0 AC lost'}]", "hot": "[{kind: sensor_over}]",
         "idrac": "[{kind: psu_lost, value: 5}]"}
POLICY = load_policy()


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Iterator[Sim]:
    home = tmp_path_factory.mktemp("bmc-health-home")
    lines = ["site: bmc-health", "pools: {p: {}}", "nodes:"]
    for i, (name, faults) in enumerate(NODES.items(), start=1):
        vendor = "dell-idrac" if name == "idrac" else "bmcsim"
        lines.append(f"  - {{name: {name}, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: {NET}.{i}, "
                     f"address: 127.67.0.{i}, bmc_vendor: {vendor}, faults: {faults}}}")
    fleet = home / "fleet.yaml"
    fleet.write_text("\n".join(lines) + "\n")
    with open(home / "bmcsim.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "lab.bmcsim", "serve", "--fleet", str(fleet), "--home", str(home)],
                                cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_port(f"{NET}.{len(NODES)}", 8443, proc)
            yield Sim(fleet, home)
        finally:
            stop(proc)


def look(sim: Sim, name: str, prev=None):
    node = sim.node(name)
    with connect(node.bmc_address, sim.creds, port=node.bmc_port, ca_bundle=sim.ca, timeout=10) as bmc:
        reading = read_health(bmc)
    return reading, *bmc_signals(POLICY, reading, prev)


@pytest.mark.parametrize(("name", "code"), [("psu", "bmc_psu_lost"), ("leak", "bmc_leak"), ("sel", "bmc_sel_critical"),
                                           ("hot", "bmc_sensor_critical"), ("idrac", "bmc_psu_lost")])
def test_each_fault_read_from_the_bmc_is_a_critical_signal(sim, name, code):
    reading, sigs, _ = look(sim, name)
    assert reading.unavailable == []
    assert [(s.code, s.severity) for s in sigs] == [(code, "critical")]


def test_a_fault_injected_while_the_bmc_runs_shows_at_the_next_look_and_goes_when_cleared(sim):
    reading, sigs, kept = look(sim, "ok")
    assert sigs == [] and reading.leaks and reading.sel
    injected = sim.home / "nodes" / "ok" / "injected.json"
    injected.parent.mkdir(parents=True, exist_ok=True)
    injected.write_text(json.dumps([{"kind": "leak"}, {"kind": "sel_entry", "value": "Coolant leak on manifold"}]))
    _, sigs, kept = look(sim, "ok", kept)
    assert sorted(s.code for s in sigs) == ["bmc_leak", "bmc_sel_critical"]
    injected.write_text("[]")   # `bringup lab clear`
    _, sigs, kept = look(sim, "ok", kept)
    assert sigs == []
