"""``bringup lab up | down | status``: bring the whole lab up, idempotently.

Real services first (PostgreSQL, Redis, NetBox, Prefect), then the simulated hardware
of the fleet profile (BMC simulator, node sshds, Kubernetes API stand-in). Each step
skips what is already there, so a second ``up`` is quick and changes nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from bringup.sku import load_skus, nic_counts
from lab.errors import LabError
from lab.fleet import FleetProfile, load_fleet
from lab.gpu.build import ensure_built

from . import procs
from .netbox_server import LIVE_DB, NetBox
from .paths import HOST, KUBE_PORT, NETBOX_PORT, PG_PORT, REDIS_PORT, REPO_ROOT, SEED_PORT, LabPaths
from .postgres import Postgres
from .prefect_server import PrefectServer
from .redis import Redis
from .steps import Reporter, Steps

DEFAULT_FLEET = REPO_ROOT / "lab" / "fleets" / "default.yaml"


@dataclass
class SimService:
    """A simulated-hardware service: ``python -m lab.<module> serve --fleet F --home H``."""

    name: str
    module: str
    ready: Callable[[FleetProfile], bool]
    timeout: float = 60.0

    def available(self) -> bool:
        return (REPO_ROOT / "lab" / self.module / "__main__.py").exists()


def _all_bmcs_up(fleet: FleetProfile) -> bool:
    return all(procs.port_open(n.bmc_address, n.bmc_port) for n in fleet.nodes)


SIM_SERVICES = [
    SimService("bmcsim", "bmcsim", _all_bmcs_up),
    SimService("nodes", "nodes", lambda fleet: True),  # nodes answer SSH only once installed
    SimService("kubeapi", "kubeapi", lambda fleet: procs.port_open(HOST, KUBE_PORT)),
]


#: heartbeat of the workers' flow runs: flows.zombies.HEARTBEAT_S (lab does not import flows)
WORKER_HEARTBEAT_S = 30


class Lab:
    def __init__(self, paths: LabPaths | None = None, fleet_path: Path | None = None,
                 prefect_db: str | None = None) -> None:
        self.paths = paths or LabPaths.default()
        self.pg = Postgres(self.paths)
        self.redis = Redis(self.paths)
        self.netbox = NetBox(self.paths, self.pg)
        self.prefect = PrefectServer(self.paths, database=prefect_db or self._remembered("prefect-db", "postgresql"))
        self._fleet_path = fleet_path

    def _remembered(self, name: str, default: str) -> str:
        path = self.paths.home / name
        return path.read_text().strip() if path.exists() else default

    @property
    def fleet_path(self) -> Path:
        if self._fleet_path:
            return self._fleet_path
        remembered = self.paths.home / "fleet-path"
        if remembered.exists():
            return Path(remembered.read_text().strip())
        return DEFAULT_FLEET

    def fleet(self) -> FleetProfile:
        return load_fleet(self.fleet_path, nic_counts(load_skus()))

    def prepare(self, report: Reporter | None = None) -> dict[str, float]:
        """The slow first-time work, with nothing served yet: PostgreSQL and Redis up, the
        NetBox release installed and its pristine database built (restored from the
        committed dump in seconds, else migrated in minutes; once per NetBox version). The
        test suite runs this first, outside any test's time limit. Each step is reported
        as it starts and ends (plain lines by default); returns seconds per step. What it
        started it stops again (`make test` left PostgreSQL and Redis running after the
        suite, whose fixtures stop only what they started); a lab already up stays up."""
        steps = Steps(report)
        self.paths.ensure()
        pg_was_up, redis_was_up = procs.port_open(HOST, PG_PORT), procs.port_open(HOST, REDIS_PORT)
        try:
            for name, fn in (("postgresql", self.pg.start), ("redis", self.redis.start),
                             ("netbox install", self.netbox.ensure_venv), ("netbox config", self.netbox.write_config),
                             ("netbox static files", self.netbox.ensure_static),
                             ("netbox pristine db", lambda: self.netbox.ensure_pristine(steps.report.note)),
                             ("gpu stand-ins", lambda: ensure_built(self.paths.home))):
                steps.run(name, fn)
        finally:
            if not redis_was_up:
                self.redis.stop()
            if not pg_was_up:
                self.pg.stop()
        return steps.timings

    def up(self, report: Reporter | None = None, with_sims: bool = True,
           workers: int | None = None) -> dict[str, float]:
        """Start everything, each step reported as it starts and ends; returns seconds spent
        per step. ``workers`` batch workers take the child runs of large commission runs
        (default: as many as last time, else 1)."""
        steps = Steps(report)
        step = steps.run

        fleet = self.fleet()  # validate before starting anything
        self.paths.ensure()
        (self.paths.home / "fleet-path").write_text(str(self.fleet_path.resolve()) + "\n")
        (self.paths.home / "prefect-db").write_text(self.prefect.database + "\n")
        workers = workers if workers is not None else int(self._remembered("batch-workers", "1"))
        (self.paths.home / "batch-workers").write_text(f"{workers}\n")
        step("postgresql", self.pg.start)
        step("redis", self.redis.start)
        step("netbox install", self.netbox.ensure_venv)
        step("netbox config", self.netbox.write_config)
        step("netbox static files", self.netbox.ensure_static)
        step("netbox pristine db", lambda: self.netbox.ensure_pristine(steps.report.note))
        step("netbox db", self.netbox.ensure_db)
        step("netbox server", self.netbox.start)
        step("prefect server", self.prefect.start)
        # built once here, so nodes installed in parallel by the BMC simulator find it
        step("gpu stand-ins", lambda: ensure_built(self.paths.home))
        if with_sims:
            for svc in SIM_SERVICES:
                if svc.available():
                    step(svc.name, lambda svc=svc: self._start_sim(svc, fleet))
        self.write_settings(fleet)
        step("prefect deployments", self.register_deployments)
        step("prefect workers", lambda: self.start_workers(workers))
        return steps.timings

    def register_deployments(self) -> None:
        """Work pool, concurrency limits and the deployments of prefect.yaml (idempotent)."""
        import subprocess
        r = subprocess.run([sys.executable, "-m", "flows.deploy"], cwd=REPO_ROOT, capture_output=True, text=True,
                           env={**os.environ, **self.prefect.env()}, check=False)
        if r.returncode != 0:
            raise LabError(f"registering the Prefect deployments failed:\n{(r.stdout + r.stderr)[-2000:]}")

    def _worker_names(self) -> list[str]:
        return sorted(p.stem for p in self.paths.run.glob("prefect-worker*.pid"))

    def start_workers(self, batch_workers: int = 1) -> None:
        """One process worker for the runs (``bringup-process``) and ``batch_workers`` for the
        child runs of large commissions (``bringup-batch``, one run at a time each). Extra
        batch workers of an earlier ``up`` are stopped."""
        self._start_worker("prefect-worker", "bringup-process")
        for i in range(1, batch_workers + 1):
            self._start_worker(f"prefect-worker-batch-{i}", "bringup-batch", limit=1)
        for name in self._worker_names():
            if name.startswith("prefect-worker-batch-") and int(name.rsplit("-", 1)[1]) > batch_workers:
                procs.stop(name, self.paths.run)

    def _start_worker(self, name: str, pool: str, limit: int | None = None) -> None:
        """A process worker; flow runs start from this checkout with the lab's settings."""
        exe = Path(sys.executable).parent / "prefect"
        argv = [str(exe), "worker", "start", "--pool", pool, "--type", "process", "--name", name]
        if limit:
            argv += ["--limit", str(limit)]
        log = self.paths.logs / f"{name}.log"
        procs.start(name, argv, run_dir=self.paths.run, log_dir=self.paths.logs, cwd=REPO_ROOT,
                    env={**self.prefect.env(), "BRINGUP_LAB_HOME": str(self.paths.home),
                         "BRINGUP_CONFIG": str(self.paths.config),
                         # a new child run is picked up within a second or two, not ten
                         "PREFECT_WORKER_QUERY_SECONDS": "2", "PREFECT_WORKER_PREFETCH_SECONDS": "5",
                         # runs beat often enough for the zombie automation (flows.zombies)
                         "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(WORKER_HEARTBEAT_S)})
        procs.wait_until(lambda: "started" in log.read_text(errors="replace").lower() if log.exists() else False,
                         timeout=60, what=f"Prefect worker {name}", log=log,
                         alive=lambda: procs.pid_of(self.paths.run, name) is not None)

    def _start_sim(self, svc: SimService, fleet: FleetProfile) -> None:
        extra = ["--seed-listen", f"{HOST}:{SEED_PORT}"] if svc.module == "bmcsim" else []
        procs.start(svc.name, [sys.executable, "-m", f"lab.{svc.module}", "serve",
                               "--fleet", str(self.fleet_path), "--home", str(self.paths.home), *extra],
                    run_dir=self.paths.run, log_dir=self.paths.logs, cwd=REPO_ROOT)
        procs.wait_until(lambda: svc.ready(fleet), timeout=svc.timeout, what=svc.name,
                         log=self.paths.logs / f"{svc.name}.log",
                         alive=lambda: procs.pid_of(self.paths.run, svc.name) is not None)

    def down(self) -> list[str]:
        stopped = []
        for name in self._worker_names():
            if procs.stop(name, self.paths.run):
                stopped.append(name)
        for svc in reversed(SIM_SERVICES):
            if procs.stop(svc.name, self.paths.run):
                stopped.append(svc.name)
        if self.prefect.stop():
            stopped.append("prefect")
        if self.netbox.stop():
            stopped.append("netbox")
        if self.redis.stop():
            stopped.append("redis")
        if self.pg.stop():
            stopped.append("postgresql")
        return stopped

    def settings_dict(self, fleet: FleetProfile) -> dict:
        s = self.paths.secrets
        pki = self.paths.home / "pki" / "ca.pem"
        kubeconfig = self.paths.home / "kube" / "kubeconfig"
        return {
            "site": fleet.site,
            "netbox_url": self.netbox.url(),
            "netbox_token_file": str(s / "netbox-token"),
            "prefect_api_url": self.prefect.api_url,
            "bmc_credentials_file": str(s / "bmc.yaml"),
            "bmc_ca_bundle": str(pki),
            "bmc_port": 8443,
            "ssh_user": "root",
            "ssh_port": 2222,
            "ssh_key_file": str(s / "id_ed25519"),
            "ssh_known_hosts": str(s / "known_hosts"),
            "kubeconfig": str(kubeconfig),
            "fleet_profile": str(self.fleet_path.resolve()),
            "image": "ubuntu-2404-cuda128",
            # the nodes' install seeds: written here by bringup, served by the BMC simulator
            "seed_dir": str(self.paths.home / "seeds"),
            "seed_url": f"http://{HOST}:{SEED_PORT}/{{node}}.iso",
            # the lab's fabric pair runs take seconds: a launch that hangs is cut and run again
            "fabric_nccl_timeout_s": 240,
            # the site storage the pool acceptance job reads and writes (lab.workloads.prepare);
            # named, so a commission runs each pool's acceptance after admitting nodes
            **{f"acceptance_{k}": str(v) for k, v in self.acceptance_storage().items()},
        }

    def acceptance_storage(self) -> dict[str, Path]:
        """The site storage's dataset sample, base weights and checkpoint folder (written once)."""
        root = self.paths.home / "site-storage"
        files = {"data": root / "data.npz", "weights": root / "weights.npz", "checkpoints": root / "checkpoints"}
        if not all(p.exists() for p in files.values()):
            from lab.workloads.prepare import prepare_storage
            return prepare_storage(root)
        return files

    def write_settings(self, fleet: FleetProfile) -> Path:
        self.paths.config.write_text("# written by `bringup lab up`; holds paths to secrets, never secrets\n"
                                     + yaml.safe_dump(self.settings_dict(fleet), sort_keys=False))
        return self.paths.config

    def status(self) -> list[dict]:
        """One row per service: name, state, URL, where its credentials are kept."""
        s = self.paths.secrets
        rows = [
            {"service": "postgresql", "up": procs.port_open(HOST, PG_PORT),
             "url": f"postgresql://bringup@{HOST}:{PG_PORT}/{LIVE_DB}", "credentials": str(s / "postgres-password")},
            {"service": "redis", "up": procs.port_open(HOST, REDIS_PORT), "url": f"redis://{HOST}:{REDIS_PORT}",
             "credentials": "-"},
            {"service": "netbox", "up": self.netbox.ready(),
             "url": self.netbox.url(NETBOX_PORT),
             "credentials": f"user admin: {s / 'netbox-admin-password'}; API token: {s / 'netbox-token'}"},
            {"service": "prefect", "up": self.prefect.healthy(), "url": self.prefect.url, "credentials": "-"},
        ]
        for name in self._worker_names() or ["prefect-worker"]:
            pool = "bringup-batch" if "batch" in name else "bringup-process"
            rows.append({"service": name, "up": procs.pid_of(self.paths.run, name) is not None,
                         "url": f"work pool {pool}", "credentials": "-"})
        try:
            fleet = self.fleet()
        except Exception:
            fleet = None
        for svc in SIM_SERVICES:
            if not svc.available():
                rows.append({"service": svc.name, "up": None, "url": "-", "credentials": "not built yet"})
                continue
            up = procs.pid_of(self.paths.run, svc.name) is not None and (fleet is None or svc.ready(fleet))
            url = {"bmcsim": f"https://<bmc_address>:8443 ({len(fleet.nodes) if fleet else '?'} BMCs)",
                   "nodes": "ssh://root@<address>:2222",
                   "kubeapi": f"https://{HOST}:{KUBE_PORT}"}[svc.name]
            cred = {"bmcsim": str(s / "bmc.yaml"), "nodes": str(s / "id_ed25519"),
                    "kubeapi": str(self.paths.home / "kube" / "kubeconfig")}[svc.name]
            rows.append({"service": svc.name, "up": up, "url": url, "credentials": cred})
        return rows
