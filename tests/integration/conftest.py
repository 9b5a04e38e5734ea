"""A whole lab for the flow tests and the fault suite: real NetBox and Prefect (session fixtures of
tests/conftest.py) plus this fleet's simulated BMCs, nodes (real sshd) and Kubernetes
API, all on loopback addresses of their own."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from bringup.netbox.schema import load_schema
from bringup.sku import load_skus, nic_counts
from lab.fleet import load_fleet
from lab.seed import seed

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "tests" / "fixtures" / "fleets" / "flow8.yaml"
KUBE_LISTEN = "127.0.0.1:56453"
SEED_LISTEN = "127.0.0.1:58092"


@pytest.fixture(scope="session")
def flow_fleet():
    return load_fleet(FLEET, nic_counts(load_skus()))


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
        **extra,
    }
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path, stop


@pytest.fixture(scope="session")
def flow_lab(tmp_path_factory, flow_fleet, netbox_server, prefect_server, lab_paths):
    """Start the simulators for flow8.yaml under a private home; yield the settings path."""
    home = tmp_path_factory.mktemp("flowlab")
    path, stop = start_fleet_lab(home, flow_fleet, FLEET, KUBE_LISTEN, seed_listen=SEED_LISTEN,
                                 netbox_url=netbox_server.url(58081),
                                 netbox_token_file=lab_paths.secrets / "netbox-token",
                                 prefect_api_url=prefect_server.api_url)
    yield path
    stop()


@pytest.fixture(scope="session")
def flow_env(flow_lab, prefect_server):
    """Point bringup and Prefect at the flow lab for this process."""
    old = {k: os.environ.get(k) for k in ("BRINGUP_CONFIG", "PREFECT_API_URL")}
    os.environ["BRINGUP_CONFIG"] = str(flow_lab)
    os.environ["PREFECT_API_URL"] = prefect_server.api_url
    yield flow_lab
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def seeded(flow_env, flow_fleet, netbox_server, postgres, netbox_url, netbox_token):
    """A fresh NetBox database with the schema applied and flow8 seeded."""
    from bringup.netbox.adapter import NetBox, connect
    from lab.netbox_server import PRISTINE_DB
    postgres.clone(PRISTINE_DB, "netbox_test")
    nb = NetBox(connect(netbox_url, netbox_token))
    nb.apply_schema(load_schema())
    seed(nb, flow_fleet, load_skus())
    return nb


@pytest.fixture
def reseeded(flow_env, flow_fleet, postgres, netbox_url, netbox_token):
    """NetBox as on day one: every node planned again (the simulators keep their state)."""
    from bringup.netbox.schema import load_schema
    from bringup.netbox.adapter import NetBox, connect
    from bringup.sku import load_skus
    from lab.netbox_server import PRISTINE_DB
    from lab.seed import seed
    postgres.clone(PRISTINE_DB, "netbox_test")
    nb = NetBox(connect(netbox_url, netbox_token))
    nb.apply_schema(load_schema())
    seed(nb, flow_fleet, load_skus())
    return nb


# --- the fault suite's fleet (tests/integration/faults) ----------------------------------------
FAULT_FLEET = REPO / "tests" / "fixtures" / "fleets" / "faults.yaml"
FAULT_KUBE_LISTEN = "127.0.0.1:56455"
FAULT_SEED_LISTEN = "127.0.0.1:58093"


@pytest.fixture(scope="session")
def fault_fleet():
    return load_fleet(FAULT_FLEET, nic_counts(load_skus()))


@pytest.fixture(scope="session")
def fault_lab(tmp_path_factory, fault_fleet, seeded, netbox_server, prefect_server, lab_paths):
    """Simulators of faults.yaml beside flow8's, its site seeded into the same test NetBox
    (after flow8, so neither seeding wipes the other); yields the settings path."""
    seed(seeded, fault_fleet, load_skus())
    home = tmp_path_factory.mktemp("faultlab")
    path, stop = start_fleet_lab(home, fault_fleet, FAULT_FLEET, FAULT_KUBE_LISTEN, seed_listen=FAULT_SEED_LISTEN,
                                 netbox_url=netbox_server.url(58081),
                                 netbox_token_file=lab_paths.secrets / "netbox-token",
                                 prefect_api_url=prefect_server.api_url,
                                 install_wait_s=60)
    yield path
    stop()


@pytest.fixture(scope="session")
def fleet_lab_starter():
    """:func:`start_fleet_lab`, for test modules that start a fleet of their own."""
    return start_fleet_lab
