"""GPU layouts real BMCs have, walked through discovery's read (inventory + verify, as the
``discover`` step does) against the BMC simulator run as its own process, one node per
profile:

- ``hpe-ilo5-oem``: iLO 5 listing GPUs only in HPE's own resources (Chassis Devices, System
  PCIDevices; empty PCIeDevices): its 8 GPUs are read there. The same BMC read with no
  vendor resource known holds the node ("GPUs could not be read from this BMC"), never
  "0 of 8";
- ``placeholder-gpu-serials``: every GPU reports "0000000000000": 8 GPUs, and the shared
  serial is a finding;
- ``board-serial-tray``: GPU pairs report their board's serial: 8 GPUs, four shared serials.

Sources: tests/fixtures/redfish/hpe-ilo5-oem-devices, tests/fixtures/redfish/gpu-serial-identity.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bringup.discovery.crawl import discover, discover_one
from bringup.redfish import Credentials
from bringup.sku import load_skus, nic_counts
from bringup_cli import app
from lab.bmcsim import hardware
from lab.bmcsim.expect import expected_nodes
from lab.fleet import load_fleet

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
#: addresses of this process's own: the module has no xdist group, so two workers may each
#: start its simulator; on shared addresses one found the other's listening and read a home
#: the other had written (CI, stop 35). The session simulator of conftest.py has 127.61.0.x.
NET = f"127.68.{os.getpid() % 250 + 1}"
FLEET = f"""
site: gpu-layouts
pools: {{p: {{}}}}
nodes:
  - {{name: hpe-oem, rack: r1, sku: hgx-h200-141gb, pool: p, bmc_address: {NET}.1, address: 127.62.4.1,
     bmc_vendor: hpe-ilo5-oem}}
  - {{name: zero-serials, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: {NET}.2, address: 127.62.4.2,
     bmc_vendor: placeholder-gpu-serials}}
  - {{name: board-serials, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: {NET}.3, address: 127.62.4.3,
     bmc_vendor: board-serial-tray}}
"""


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.3):
            return True
    except OSError:
        return False


class Lab:
    def __init__(self, home: Path) -> None:
        self.skus = load_skus()
        self.fleet = load_fleet(home / "fleet.yaml", nic_counts(self.skus))
        self.ca = str(home / "pki" / "ca.pem")
        creds = yaml.safe_load((home / "secrets" / "bmc.yaml").read_text())["default"]
        self.creds = Credentials(creds["username"], creds["password"])
        self.expected = {n.name: n for n in expected_nodes(self.fleet, self.skus)}


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[Lab]:
    home = tmp_path_factory.mktemp("gpu-layouts")
    (home / "fleet.yaml").write_text(FLEET)
    with open(home / "bmcsim.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "lab.bmcsim", "serve", "--fleet", str(home / "fleet.yaml"),
                                 "--home", str(home), "--power-delay", "0.3"], cwd=REPO, stdout=log,
                                stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 20
            # its own credentials written and its last node listening: the simulator is up
            while not ((home / "secrets" / "bmc.yaml").exists() and _listening(f"{NET}.3", 8443)):
                assert proc.poll() is None, (home / "bmcsim.log").read_text()
                assert time.monotonic() < deadline, "the simulator did not listen in 20 s"
                time.sleep(0.1)
            yield Lab(home)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


@pytest.fixture(scope="module")
def found(lab):
    results = discover(list(lab.expected.values()), lambda _a: lab.creds, port=8443, ca_bundle=lab.ca,
                       timeout=5.0, retries=1, concurrency=3)
    return {r.name: r for r in results}


def codes(r, severity=None):
    return sorted(f.code for f in r.findings if severity is None or f.severity == severity)


def test_hpe_gpus_listed_only_in_hpe_resources_are_read_there(found, lab):
    r = found["hpe-oem"]
    assert r.ok, r.findings
    node = lab.fleet.node("hpe-oem")
    inv = r.inventory
    assert len(inv.gpus) == 8 and {g.source for g in inv.gpus} == {"Oem.Hpe.Links.Devices"}
    assert sorted(g.serial for g in inv.gpus) == sorted(hardware.gpu_serial(node, i) for i in range(8))
    assert all(g.uri.startswith("/redfish/v1/Chassis/1/Devices/") for g in inv.gpus)
    assert inv.unavailable == [] and "gpu_count" not in codes(r)


def test_the_same_bmc_without_a_known_vendor_resource_holds_the_node(lab):
    r = discover_one(lab.expected["hpe-oem"], lambda _a: lab.creds, port=8443, ca_bundle=lab.ca, timeout=5.0,
                     retries=1, quirks={"gpu_oem_sources": []})
    assert r.inventory is not None and r.inventory.gpus == []
    assert codes(r, "hold") == ["gpus_unreadable"] and not codes(r, "critical")
    assert r.held[0].message.startswith("GPUs could not be read from this BMC")
    assert not r.ok and "HELD" in r.to_markdown()


@pytest.mark.parametrize("name,groups", [("zero-serials", 1), ("board-serials", 4)])
def test_gpus_that_share_a_serial_are_all_reported_with_the_finding(found, name, groups):
    r = found[name]
    assert len(r.inventory.gpus) == 8 and len({g.uri for g in r.inventory.gpus}) == 8
    assert "gpu_count" not in codes(r)
    [same] = [f for f in r.findings if f.code == "gpu_serial_identical"]
    assert same.severity == "warning" and len(same.evidence["serials"]) == groups
    assert sum(len(ids) for ids in same.evidence["serials"].values()) == 8
    assert bool(same.evidence["placeholders"]) is (name == "zero-serials")
    assert r.ok     # a shared serial needs a look; it does not block the node


def test_bmc_inventory_keeps_its_contract_on_the_oem_layout(lab, tmp_path):
    pw = tmp_path / "bmc.pw"
    pw.write_text(lab.creds.password + "\n")
    pw.chmod(0o600)
    node = lab.fleet.node("hpe-oem")
    r = CliRunner().invoke(app, ["bmc", "inventory", f"https://{node.bmc_address}:8443", "--user",
                                 lab.creds.username, "--password-file", str(pw), "--ca", lab.ca, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert len(doc["gpus"]) == 8 and doc["unavailable"] == [] and doc["gpu_serials_identical"] == {}
