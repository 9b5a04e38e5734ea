"""Fixtures for the Redfish integration tests: real servers on loopback, torn down after.

- ``bmcsim``: the fleet BMC simulator as its own process (``python -m lab.bmcsim serve``)
  serving ``FAULT_FLEET`` (one node per Redfish fault) on 127.61.0.x:8443;
- ``mockup_server``: DMTF's public mockups served read-only (folder -> URL, index.json);
- ``sushy``: OpenStack's ``sushy-emulator --fake``;
- ``image_server``: a tiny "ISO" over HTTP for virtual media.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
MOCKUPS = REPO.parent / "shared" / "redfish" / "mockups"
VENV_BIN = Path(sys.executable).parent

FAULT_FLEET = """
site: redfish-test
pools: {p: {}}
nodes:
  - {name: ok-1, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.61.0.1, address: 127.62.0.1}
  - name: missing-gpu
    rack: r1
    sku: hgx-h100-80gb
    pool: p
    bmc_address: 127.61.0.2
    address: 127.62.0.2
    faults: [{kind: missing_gpu, gpu: 5}]
  - name: mac-mismatch
    rack: r1
    sku: hgx-h100-80gb
    pool: p
    bmc_address: 127.61.0.3
    address: 127.62.0.3
    faults: [{kind: mac_mismatch, iface: cx3}]
  - name: nic-swapped
    rack: r1
    sku: hgx-h100-80gb
    pool: p
    bmc_address: 127.61.0.4
    address: 127.62.0.4
    faults: [{kind: nic_swapped, iface: cx1, other: cx2}]
  - name: bios-drift
    rack: r1
    sku: hgx-h200-141gb
    pool: p
    bmc_address: 127.61.0.5
    address: 127.62.0.5
    faults: [{kind: bios_drift, attribute: IommuSupport, value: Enabled}]
  - name: bios-stuck
    rack: r1
    sku: hgx-h200-141gb
    pool: p
    bmc_address: 127.61.0.6
    address: 127.62.0.6
    faults: [{kind: bios_not_applied, attribute: NumaNodesPerSocket}]
  - name: bmc-slow
    rack: r1
    sku: hgx-h100-80gb
    pool: p
    bmc_address: 127.61.0.7
    address: 127.62.0.7
    faults: [{kind: bmc_slow, value: 0.05}]
  - name: bmc-timeout
    rack: r1
    sku: hgx-h100-80gb
    pool: p
    bmc_address: 127.61.0.8
    address: 127.62.0.8
    faults: [{kind: bmc_timeout}]
  - name: bmc-500
    rack: r1
    sku: hgx-h100-80gb
    pool: p
    bmc_address: 127.61.0.9
    address: 127.62.0.9
    faults: [{kind: bmc_500}]
  - name: bmc-401
    rack: r1
    sku: hgx-h100-80gb
    pool: p
    bmc_address: 127.61.0.10
    address: 127.62.0.10
    faults: [{kind: bmc_401}]
  - name: ok-2
    rack: r1
    sku: hgx-h200-141gb
    pool: p
    bmc_address: 127.61.0.11
    address: 127.62.0.11
    faults: [{kind: ecc_off}]
  # one healthy node per vendor profile, then the inventory and BIOS faults on real layouts
  - {name: hgx, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.61.0.12, address: 127.62.0.12,
     bmc_vendor: supermicro-hgx}
  - {name: dell, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.61.0.13, address: 127.62.0.13,
     bmc_vendor: dell-idrac}
  - {name: hpe, rack: r1, sku: hgx-h200-141gb, pool: p, bmc_address: 127.61.0.14, address: 127.62.0.14,
     bmc_vendor: hpe-ilo}
  - {name: ami, rack: r1, sku: hgx-h200-141gb, pool: p, bmc_address: 127.61.0.15, address: 127.62.0.15,
     bmc_vendor: ami-megarac}
  - {name: member-404, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.61.0.16, address: 127.62.0.16,
     faults: [{kind: member_404, iface: cx3}, {kind: member_404, gpu: 4}]}
  - {name: fc-port, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.61.0.17, address: 127.62.0.17,
     bmc_vendor: dell-idrac, faults: [{kind: fc_port}]}
  - {name: mac-na, rack: r1, sku: hgx-h200-141gb, pool: p, bmc_address: 127.61.0.18, address: 127.62.0.18,
     bmc_vendor: hpe-ilo, faults: [{kind: mac_not_available, iface: cx5}]}
  - {name: chipset, rack: r1, sku: hgx-h200-141gb, pool: p, bmc_address: 127.61.0.19, address: 127.62.0.19,
     bmc_vendor: hpe-ilo, faults: [{kind: chipset_function}]}
  - {name: dell-swapped, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.61.0.20, address: 127.62.0.20,
     bmc_vendor: dell-idrac, faults: [{kind: nic_swapped, iface: cx4, other: cx6}]}
  - {name: second-reset, rack: r1, sku: hgx-h200-141gb, pool: p, bmc_address: 127.61.0.21, address: 127.62.0.21,
     faults: [{kind: bios_second_reset}]}
  - {name: dell-stuck, rack: r1, sku: hgx-h200-141gb, pool: p, bmc_address: 127.61.0.22, address: 127.62.0.22,
     bmc_vendor: dell-idrac, faults: [{kind: bios_not_applied, attribute: NumaNodesPerSocket}]}
  - {name: boot-fail, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.61.0.23, address: 127.62.0.23,
     bmc_vendor: hpe-ilo, faults: [{kind: boot_fail}]}
  - {name: fw-drift, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.61.0.24, address: 127.62.0.24,
     bmc_vendor: supermicro-hgx, faults: [{kind: firmware_drift, attribute: GPU5_VBIOS, value: 96.00.61.00.01}]}
  - {name: fw-drift-dell, rack: r1, sku: hgx-h200-141gb, pool: p, bmc_address: 127.61.0.25, address: 127.62.0.25,
     bmc_vendor: dell-idrac, faults: [{kind: firmware_drift, attribute: BIOS, value: 1.8.0}]}
  - {name: fw-drift-ami, rack: r1, sku: hgx-h200-141gb, pool: p, bmc_address: 127.61.0.26, address: 127.62.0.26,
     bmc_vendor: ami-megarac, faults: [{kind: firmware_drift, attribute: GPU0_VBIOS, value: 96.00.5A.00.01}]}
"""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_port(host: str, port: int, proc: subprocess.Popen | None = None, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {host}:{port}")
        try:
            with socket.create_connection((host, port), timeout=0.3):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout}s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


class Sim:
    def __init__(self, fleet_path: Path, home: Path) -> None:
        from bringup.sku import load_skus, nic_counts
        from lab.fleet import load_fleet
        self.skus = load_skus()
        self.fleet_path = fleet_path
        self.fleet = load_fleet(fleet_path, nic_counts(self.skus))
        self.home = home
        self.ca = str(home / "pki" / "ca.pem")
        creds = yaml.safe_load((home / "secrets" / "bmc.yaml").read_text())["default"]
        from bringup.redfish import Credentials
        self.creds = Credentials(creds["username"], creds["password"])

    def node(self, name: str):
        return self.fleet.node(name)


@pytest.fixture(scope="session")
def bmcsim(tmp_path_factory) -> Iterator[Sim]:
    home = tmp_path_factory.mktemp("bmcsim-home")
    fleet = home / "fleet.yaml"
    fleet.write_text(FAULT_FLEET)
    with open(home / "bmcsim.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "lab.bmcsim", "serve", "--fleet", str(fleet), "--home",
                                 str(home), "--power-delay", "0.3"], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_port("127.61.0.23", 8443, proc)
            yield Sim(fleet, home)
        finally:
            stop(proc)


class _MockupHandler(SimpleHTTPRequestHandler):
    """Read-only mockup tree: /redfish/v1/X/Y -> ROOT/X/Y/index.json; overrides map path -> raw bytes."""

    overrides: ClassVar[dict[str, bytes]] = {}

    def log_message(self, *args) -> None:
        pass

    def _body(self) -> tuple[int, bytes]:
        path = self.path.split("?")[0].rstrip("/")
        if path in self.overrides:
            return 200, self.overrides[path]
        rel = path[len("/redfish/v1"):].strip("/") if path.startswith("/redfish/v1") else None
        if path == "/redfish":
            return 200, json.dumps({"v1": "/redfish/v1/"}).encode()
        if rel is None:
            return 404, b"{}"
        f = Path(self.directory) / rel / "index.json"
        if not f.is_file():
            return 404, b'{"error": {"message": "not in the mockup"}}'
        return 200, f.read_bytes()

    def do_GET(self) -> None:
        status, body = self._body()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # read-only: no sessions, so clients fall back to Basic
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_PATCH = do_DELETE = do_POST


@pytest.fixture
def mockup_server():
    servers = []

    def start(name: str, overrides: dict[str, bytes] | None = None) -> str:
        handler = type("H", (_MockupHandler,), {"overrides": overrides or {}})
        srv = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(MOCKUPS / name)))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def image_server(tmp_path) -> Iterator[str]:
    (tmp_path / "install.iso").write_bytes(b"\0" * 2048)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/install.iso"
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def sushy(tmp_path_factory) -> Iterator[str]:
    exe = VENV_BIN / "sushy-emulator"
    if not exe.exists():
        pytest.fail("sushy-emulator is not installed; run `uv sync` (dev group)")
    port = free_port()
    home = tmp_path_factory.mktemp("sushy")
    with open(home / "sushy.log", "w") as log:
        proc = subprocess.Popen([str(exe), "--fake", "-i", "127.0.0.1", "-p", str(port)], cwd=home, stdout=log,
                                stderr=subprocess.STDOUT, env=dict(os.environ))
        try:
            wait_port("127.0.0.1", port, proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(proc)
