"""Benchmark: fleet discovery throughput against the BMC simulator (prints figures; not a test).

    .venv/bin/python bench/discovery.py --bmcs 256

Generates a fleet profile of N healthy nodes in a temp dir, starts the fleet BMC simulator
as its own process (as the lab does), then measures, side by side in one run:

- concurrent discovery: ``bringup.discovery.discover`` (session login, ``$expand``,
  ``concurrency`` worker threads, full verification);
- the same ``discover`` with ``concurrency=1`` (what concurrency alone buys);
- a plain sequential crawl with the same DMTF library: one BMC after the other, log in,
  GET every resource reachable from the service root (following ``@odata.id`` outside
  ``Links``), log out. That is what a naive inventory script does. With
  ``--sequential-sample`` it crawls only the first K BMCs (each BMC costs the same, so the
  rate is per BMC either way); the default crawls them all.

Reports BMCs/s and HTTP requests per BMC for both.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import yaml
from redfish import redfish_client
from requests.adapters import HTTPAdapter

from bringup.discovery import discover
from bringup.fleet import load_fleet
from bringup.redfish import Credentials
from bringup.sku import load_skus, nic_counts
from lab.bmcsim.expect import expected_nodes


def make_fleet(n: int, path: Path) -> None:
    skus = sorted(load_skus())
    nodes = []
    for i in range(n):
        nodes.append({"name": f"bench-n{i:04d}", "rack": f"r{i // 32:03d}", "sku": skus[i % len(skus)],
                      "pool": "bench", "bmc_address": f"127.70.{i // 250}.{i % 250 + 1}",
                      "address": f"127.71.{i // 250}.{i % 250 + 1}"})
    path.write_text(yaml.safe_dump({"site": "bench", "pools": {"bench": {}}, "nodes": nodes}))


def wait_port(host: str, port: int, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the simulator exited with {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.3):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the simulator did not start listening")


class Counting(HTTPAdapter):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def send(self, request, **kw):  # type: ignore[override]
        self.count += 1
        return super().send(request, **kw)


def _refs(doc: Any, out: list[str], in_links: bool = False) -> None:
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == "@odata.id" and isinstance(v, str) and not in_links:
                out.append(v)
            else:
                _refs(v, out, in_links or k == "Links")
    elif isinstance(doc, list):
        for v in doc:
            _refs(v, out, in_links)


def crawl(address: str, port: int, creds: Credentials, ca: str) -> int:
    """Plain crawl of one BMC with the DMTF library; returns requests sent."""
    adapter = Counting()
    client = redfish_client(base_url=f"https://{address}:{port}", username=creds.username, password=creds.password,
                            cafile=ca, timeout=10, max_retry=0, https_adapter=adapter)
    client.login(auth="session")
    seen = {"/redfish/v1/", "/redfish/v1"}
    todo = [r for r in _collect(client.root)]
    while todo:
        uri = todo.pop(0).rstrip("/") or "/"
        if uri in seen or "#" in uri or "/Actions/" in uri:
            continue
        seen.add(uri)
        resp = client.get(uri)
        if resp.status == 200:
            todo.extend(_collect(resp.dict))
    client.logout()
    return adapter.count


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of another process (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def _collect(doc: Any) -> list[str]:
    out: list[str] = []
    _refs(dict(doc), out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bmcs", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--sequential-sample", type=int, default=0,
                    help="crawl only the first K BMCs sequentially (0: all)")
    ap.add_argument("--latency", type=float, default=0.0,
                    help="seconds the simulated BMCs add to every response (real BMCs: 0.05-0.5)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-discovery-") as tmp:
        home = Path(tmp)
        fleet_path = home / "fleet.yaml"
        make_fleet(args.bmcs, fleet_path)
        skus = load_skus()
        fleet = load_fleet(fleet_path, nic_counts(skus))
        log = open(home / "bmcsim.log", "w")  # noqa: SIM115 - closed in the finally below
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "lab.bmcsim", "serve", "--fleet", str(fleet_path),
                                 "--home", str(home), "--latency", str(args.latency), "--log-level", "WARNING"],
                                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        try:
            last = fleet.nodes[-1]
            wait_port(last.bmc_address, last.bmc_port, proc)
            print(f"simulator: {args.bmcs} BMCs up in {time.monotonic() - t0:.1f}s (pid {proc.pid}, "
                  f"latency {args.latency}s/response); client and simulator share {os.cpu_count()} CPUs")
            d = yaml.safe_load((home / "secrets" / "bmc.yaml").read_text())["default"]
            creds = Credentials(d["username"], d["password"])
            ca = str(home / "pki" / "ca.pem")

            expected = expected_nodes(fleet, skus)
            sim_cpu0, cli_cpu0 = _proc_cpu(proc.pid), time.process_time()
            t = time.monotonic()
            results = discover(expected, lambda _a: creds, port=8443, ca_bundle=ca, concurrency=args.concurrency,
                               timeout=30.0)
            conc_s = time.monotonic() - t
            conc_cpu = (_proc_cpu(proc.pid) - sim_cpu0, time.process_time() - cli_cpu0)
            failed = [r for r in results if not r.ok]
            conc_req = sum(r.requests for r in results) / len(results)
            conc_rate = len(results) / conc_s

            k = args.sequential_sample or args.bmcs
            sim_cpu0, cli_cpu0 = _proc_cpu(proc.pid), time.process_time()
            t = time.monotonic()
            seq_req = sum(crawl(n.bmc_address, n.bmc_port, creds, ca) for n in fleet.nodes[:k])
            seq_s = time.monotonic() - t
            seq_cpu = (_proc_cpu(proc.pid) - sim_cpu0, time.process_time() - cli_cpu0)
            seq_rate = k / seq_s

            t = time.monotonic()
            one = discover(expected[:k], lambda _a: creds, port=8443, ca_bundle=ca, concurrency=1, timeout=30.0)
            one_s = time.monotonic() - t
            one_req = sum(r.requests for r in one) / len(one)

            print()
            print(f"{'':28}{'BMCs':>6}{'seconds':>10}{'BMC/s':>9}{'req/BMC':>9}{'req/s':>8}")
            print(f"{'concurrent discover()':28}{len(results):>6}{conc_s:>10.2f}{conc_rate:>9.1f}{conc_req:>9.1f}"
                  f"{conc_req * conc_rate:>8.0f}")
            print(f"{'sequential plain crawl':28}{k:>6}{seq_s:>10.2f}{seq_rate:>9.1f}{seq_req / k:>9.1f}"
                  f"{seq_req / seq_s:>8.0f}")
            print(f"{'discover(), concurrency=1':28}{k:>6}{one_s:>10.2f}{k / one_s:>9.1f}{one_req:>9.1f}"
                  f"{one_req * k / one_s:>8.0f}")
            print(f"\nCPU seconds (simulator / client): concurrent {conc_cpu[0]:.1f} / {conc_cpu[1]:.1f}, "
                  f"sequential {seq_cpu[0]:.1f} / {seq_cpu[1]:.1f}")
            print(f"speed-up: {conc_rate / seq_rate:.1f}x; nodes not ok: {len(failed)}"
                  + (f" (first: {failed[0].name}: {failed[0].error or [f.code for f in failed[0].findings]})"
                     if failed else ""))
            return 1 if failed else 0
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


if __name__ == "__main__":
    sys.exit(main())
