"""Fleet labs for the flow tests, the fault suite and the watch tests: each fleet
(tests/fixtures/fleets/*.yaml) gets its simulated BMCs, nodes (real sshd) and Kubernetes
API on loopback addresses of its own, and a NetBox server over a database of its own
(tests/ports.py: the worker's block), beside the worker's Prefect server (tests/conftest.py).

Each scenario sets up what it needs: a module of the flow lab starts from a fresh clone of
the pristine database with flow8 seeded (``seeded``), a test that needs NetBox as on day
one gets another (``reseeded``); nothing depends on which module ran before. The
simulators of a fleet live for the session and keep their state (as a real fleet's
hardware would); every test of a fleet carries ``xdist_group("<fleet>")``, so one
worker runs them and the addresses are never taken twice.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

import ports
import pytest
import yaml
from schema_db import fresh_with_schema

from bringup.netbox.adapter import NetBox, connect
from bringup.sku import load_skus, nic_counts
from lab.fleet import load_fleet
from lab.seed import seed

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "tests" / "fixtures" / "fleets" / "flow8.yaml"
FAULT_FLEET = REPO / "tests" / "fixtures" / "fleets" / "faults.yaml"


class ScenarioNetBox:
    """A NetBox server of one scenario (a role of tests/ports.py) over a database of its
    own, cloned from the pristine one: resetting it touches no other scenario's."""

    def __init__(self, install, postgres, role: str, token: str) -> None:
        self.install, self.postgres, self.role, self.token = install, postgres, role, token
        self.name, self.port, self.db = ports.netbox_name(role), ports.netbox_port(role), ports.netbox_db(role)
        self._day1: set[str] = set()

    @property
    def url(self) -> str:
        return self.install.url(self.port)

    @property
    def start_args(self) -> dict:
        return {"name": self.name, "port": self.port, "db": self.db, "redis_db": ports.REDIS_DB, "workers": 2}

    def start(self) -> None:
        if not self.postgres.exists(self.db):
            self.fresh_db()
        self.install.start(**self.start_args)

    def stop(self) -> None:
        self.install.stop(self.name)
        self.drop_day1()

    def adapter(self) -> NetBox:
        return NetBox(connect(self.url, self.token))

    def fresh_db(self, template: str | None = None) -> None:
        """A fresh clone of the pristine database (or of ``template``) under the running
        server (the drop ends its persistent connections; its next request opens new
        ones), and its cache emptied."""
        from lab.netbox_server import PRISTINE_DB
        self.postgres.clone(template or PRISTINE_DB, self.db)
        ports.flush_redis()

    def seeded(self, fleet) -> NetBox:
        """NetBox as on day one: a fresh database, bringup's schema, ``fleet`` planned.
        Seeded once a session (tens of seconds); later a clone of that (under a second)."""
        day1 = f"{self.db}_day1_{fleet.site.replace('-', '_')}"
        if day1 in self._day1:
            self.fresh_db(template=day1)
            return self.adapter()
        nb = fresh_with_schema(self.postgres, self.db, self.adapter)
        seed(nb, fleet, load_skus())
        self.postgres.clone(self.db, day1)    # ends the server's sessions on it first
        self._day1.add(day1)
        return nb

    def drop_day1(self) -> None:
        for db in self._day1:
            self.postgres.drop(db)
        self._day1.clear()


@pytest.fixture(scope="session")
def scenario_netbox(netbox_install, postgres, netbox_token):
    """``scenario_netbox(role) -> ScenarioNetBox``, started; every one made is stopped at
    the end of the session."""
    made: list[ScenarioNetBox] = []

    def make(role: str) -> ScenarioNetBox:
        srv = ScenarioNetBox(netbox_install, postgres, role, netbox_token)
        made.append(srv)      # before start: a server that failed to start is stopped too
        srv.start()
        return srv

    yield make
    for srv in made:
        srv.stop()


def start_fleet_lab(home: Path, fleet, fleet_path: Path, kube_listen: str, *, netbox_url: str,
                    netbox_token_file: Path, prefect_api_url: str, seed_listen: str, **extra):
    """Start the simulators (BMCs, nodes, Kubernetes API) of one fleet under ``home`` and
    write its settings file. Returns (settings path, stop function)."""
    from lab import procs
    from lab.supervisor import SIM_SERVICES

    run, logs = home / "run", home / "logs"
    started = []

    def stop() -> None:
        for name in reversed(started):
            procs.stop(name, run)

    host, port = kube_listen.split(":")
    try:
        for svc in SIM_SERVICES:
            argv = [sys.executable, "-m", f"lab.{svc.module}", "serve", "--fleet", str(fleet_path), "--home", str(home)]
            if svc.module == "kubeapi":
                argv += ["--listen", kube_listen]
            if svc.module == "bmcsim":
                argv += ["--seed-listen", seed_listen]
            procs.start(svc.name, argv, run_dir=run, log_dir=logs, cwd=REPO)
            started.append(svc.name)
        procs.wait_until(lambda: all(procs.port_open(n.bmc_address, n.bmc_port) for n in fleet.nodes),
                         timeout=60, what="BMC simulator", log=logs / "bmcsim.log")
        procs.wait_until(lambda: procs.port_open(host, int(port)) and (home / "kube" / "kubeconfig").exists(),
                         timeout=60, what="Kubernetes API stand-in", log=logs / "kubeapi.log")
        procs.wait_until(lambda: (home / "secrets" / "id_ed25519.pub").exists(), timeout=60, what="simulated nodes",
                         log=logs / "nodes.log")
    except BaseException:
        stop()  # a lab that failed to start must not hold its addresses for the next test session
        raise
    settings = {
        "site": fleet.site,
        "netbox_url": netbox_url,
        "netbox_token_file": str(netbox_token_file),
        "prefect_api_url": prefect_api_url,
        "bmc_credentials_file": str(home / "secrets" / "bmc.yaml"),
        "bmc_ca_bundle": str(home / "pki" / "ca.pem"),
        "bmc_port": 8443,
        "ssh_port": 2222,
        "ssh_key_file": str(home / "secrets" / "id_ed25519"),
        "ssh_known_hosts": str(home / "secrets" / "known_hosts"),
        "kubeconfig": str(home / "kube" / "kubeconfig"),
        "image": "ubuntu-2404-cuda128",
        "seed_dir": str(home / "seeds"),
        "seed_url": f"http://{seed_listen}/{{node}}.iso",
        # the lab's pair runs take seconds; a launch that hangs is cut and run again in time
        "fabric_nccl_timeout_s": 240,
        **extra,
    }
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path, stop


@contextmanager
def lab_env(settings: Path, prefect_api_url: str):
    """Point bringup and Prefect at one fleet lab for this process, then put back what was."""
    old = {k: os.environ.get(k) for k in ("BRINGUP_CONFIG", "PREFECT_API_URL")}
    os.environ["BRINGUP_CONFIG"] = str(settings)
    os.environ["PREFECT_API_URL"] = prefect_api_url
    try:
        yield settings
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def fleet_lab_starter():
    """:func:`start_fleet_lab`, for test modules that start a fleet of their own."""
    return start_fleet_lab


@pytest.fixture(scope="session")
def lab_env_for():
    """:func:`lab_env`, for test modules that start a fleet of their own."""
    return lab_env


# --- flow8: the flow tests (xdist_group "flow8"); tests/integration/faults/conftest.py ------
# --- runs most of the fault suite on a copy of it (flow8b) beside them ------------------------
def shifted_fleet(src: Path, dst: Path, octets: dict[str, str]) -> Path:
    """Write ``src`` to ``dst`` with its loopback networks moved (``{"127.11.": "127.12.", ...}``):
    the same fleet on addresses of its own, so two copies run at once on two workers and
    never drift apart (one file holds the fleet)."""
    text = src.read_text()
    for old, new in octets.items():
        assert old in text, f"{src} has no address in {old}*"
        text = text.replace(old, new)
    dst.write_text(f"# {src.name} moved to {', '.join(octets.values())} (tests/integration/conftest.py)\n" + text)
    return dst


@pytest.fixture(scope="session")
def flow_lab_tools():
    """What a copy of the flow lab is made with (tests/integration/faults/conftest.py):
    flow8.yaml, :func:`shifted_fleet` and :func:`start_flow_lab`."""
    from types import SimpleNamespace
    return SimpleNamespace(fleet=FLEET, shifted=shifted_fleet, start=start_flow_lab)


@pytest.fixture(scope="session")
def flow_fleet_path() -> Path:
    return FLEET


@pytest.fixture(scope="session")
def flow_fleet(flow_fleet_path):
    return load_fleet(flow_fleet_path, nic_counts(load_skus()))


@pytest.fixture(scope="session")
def flow_netbox(scenario_netbox):
    return scenario_netbox("flow8")


def start_flow_lab(group: str, tmp_path_factory, fleet, fleet_path: Path, netbox, prefect_server, lab_paths):
    """The simulators of a flow8 copy (``group``: its ports in tests/ports.py) under a
    private home: (settings path, stop)."""
    home = tmp_path_factory.mktemp(f"{group}lab")
    fleet_ports = ports.FLEETS[group]
    return start_fleet_lab(home, fleet, fleet_path, fleet_ports.kube_listen,
                           seed_listen=fleet_ports.seed_listen, netbox_url=netbox.url,
                           netbox_token_file=lab_paths.secrets / "netbox-token",
                           prefect_api_url=prefect_server.api_url)


@pytest.fixture(scope="session")
def flow_lab(tmp_path_factory, flow_fleet, flow_fleet_path, flow_netbox, prefect_server, lab_paths):
    """Start the simulators for flow8.yaml under a private home; yield the settings path."""
    path, stop = start_flow_lab("flow8", tmp_path_factory, flow_fleet, flow_fleet_path, flow_netbox,
                                prefect_server, lab_paths)
    yield path
    stop()


@pytest.fixture(scope="module")
def flow_env(flow_lab, prefect_server):
    """Point bringup and Prefect at the flow lab for this module."""
    with lab_env(flow_lab, prefect_server.api_url) as path:
        yield path


@pytest.fixture(scope="module")
def seeded(flow_env, flow_netbox, flow_fleet) -> NetBox:
    """This module's flow8 NetBox: a fresh database, the schema applied, flow8 seeded."""
    return flow_netbox.seeded(flow_fleet)


@pytest.fixture
def reseeded(flow_env, flow_netbox, flow_fleet) -> NetBox:
    """NetBox as on day one for this test: every node planned again (the simulators keep
    their state)."""
    return flow_netbox.seeded(flow_fleet)


# --- the fault suite's own fleet (tests/integration/faults/test_fault_fleet.py, "faults") ----
@pytest.fixture(scope="session")
def fault_fleet():
    return load_fleet(FAULT_FLEET, nic_counts(load_skus()))


@pytest.fixture(scope="module")
def fault_netbox(scenario_netbox) -> ScenarioNetBox:
    """The fault fleet's NetBox server, over a database of its own."""
    return scenario_netbox("faults")


@pytest.fixture(scope="module")
def fault_seeded(fault_netbox, fault_fleet) -> NetBox:
    """The fault fleet's NetBox on day one: schema applied, faults.yaml seeded."""
    return fault_netbox.seeded(fault_fleet)


@pytest.fixture(scope="module")
def fault_lab(tmp_path_factory, fault_fleet, fault_netbox, fault_seeded, prefect_server, lab_paths):
    """Simulators of faults.yaml, its settings pointing at its own NetBox; yields the
    settings path (BRINGUP_CONFIG for the module)."""
    home = tmp_path_factory.mktemp("faultlab")
    fleet_ports = ports.FLEETS["faults"]
    path, stop = start_fleet_lab(home, fault_fleet, FAULT_FLEET, fleet_ports.kube_listen,
                                 seed_listen=fleet_ports.seed_listen, netbox_url=fault_netbox.url,
                                 netbox_token_file=lab_paths.secrets / "netbox-token",
                                 prefect_api_url=prefect_server.api_url,
                                 install_wait_s=60)
    try:
        with lab_env(path, prefect_server.api_url):
            yield path
    finally:
        stop()
