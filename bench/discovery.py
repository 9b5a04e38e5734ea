"""Benchmark: fleet discovery throughput against the BMC simulator (prints figures; not a test).

    .venv/bin/python bench/discovery.py --bmcs 256

Generates a fleet profile of N healthy nodes in a temp dir, starts the fleet BMC simulator
as its own process (as the lab does), then measures, side by side in one run:

- concurrent discovery: ``bringup.discovery.crawl.discover`` (session login, ``$expand``,
  ``concurrency`` worker threads, full verification);
- the same ``discover`` with ``concurrency=1`` (what concurrency alone buys);
- a plain sequential crawl with the same DMTF library: one BMC after the other, log in,
  GET every resource reachable from the service root (following ``@odata.id`` outside
  ``Links``), log out. That is what a naive inventory script does. With
  ``--sequential-sample`` (default 64) it crawls only the first K BMCs: each BMC costs the
  same, so the rate is per BMC either way; 0 crawls them all.

Reports BMCs/s, HTTP requests and CPU per BMC for each path, over ``--rounds`` rounds that
alternate the paths (a shared machine's noise then hits both alike), and the median ratio.
Both paths are warmed up first: steady state is what a fleet run sees.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import yaml
from redfish import redfish_client
from requests.adapters import HTTPAdapter

from bringup.discovery.crawl import discover
from bringup.redfish import Credentials
from bringup.sku import load_skus, nic_counts
from lab.bmcsim.expect import expected_nodes
from lab.fleet import load_fleet


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


@dataclass
class Row:
    round: int
    what: str
    bmcs: int
    seconds: float
    requests: int
    sim_cpu: float
    cli_cpu: float

    @property
    def rate(self) -> float:
        return self.bmcs / self.seconds


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
    todo = list(_collect(client.root))
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
    ap.add_argument("--sequential-sample", type=int, default=64,
                    help="crawl only the first K BMCs sequentially (0: all); every BMC costs the same")
    ap.add_argument("--rounds", type=int, default=3,
                    help="measure both paths this many times, alternating; the median ratio is reported")
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
            # warm-up, not timed: the first calls pay for imports, model schemas and the TLS
            # context; both measured paths below then run in the same warm process
            discover(expected[:4], lambda _a: creds, port=8443, ca_bundle=ca, concurrency=4, timeout=30.0)
            crawl(fleet.nodes[0].bmc_address, fleet.nodes[0].bmc_port, creds, ca)

            k = args.sequential_sample or args.bmcs
            rows, failed = [], []
            # rounds alternate the two paths, so a noisy neighbour slows both rather than one
            for rnd in range(1, args.rounds + 1):
                sim0, cli0, t = _proc_cpu(proc.pid), time.process_time(), time.monotonic()
                results = discover(expected, lambda _a: creds, port=8443, ca_bundle=ca,
                                   concurrency=args.concurrency, timeout=30.0)
                rows.append(Row(rnd, "concurrent discover()", len(results), time.monotonic() - t,
                                sum(r.requests for r in results), _proc_cpu(proc.pid) - sim0,
                                time.process_time() - cli0))
                failed += [r for r in results if not r.ok]

                sim0, cli0, t = _proc_cpu(proc.pid), time.process_time(), time.monotonic()
                sent = sum(crawl(n.bmc_address, n.bmc_port, creds, ca) for n in fleet.nodes[:k])
                rows.append(Row(rnd, "sequential plain crawl", k, time.monotonic() - t, sent,
                                _proc_cpu(proc.pid) - sim0, time.process_time() - cli0))

                sim0, cli0, t = _proc_cpu(proc.pid), time.process_time(), time.monotonic()
                one = discover(expected[:k], lambda _a: creds, port=8443, ca_bundle=ca, concurrency=1, timeout=30.0)
                rows.append(Row(rnd, "discover(), concurrency=1", k, time.monotonic() - t,
                                sum(r.requests for r in one), _proc_cpu(proc.pid) - sim0,
                                time.process_time() - cli0))

            print()
            print(f"{'round':<7}{'':27}{'BMCs':>6}{'seconds':>9}{'BMC/s':>8}{'req/BMC':>9}{'req/s':>7}"
                  f"{'CPU ms/BMC sim/client':>24}")
            for r in rows:
                print(f"{r.round:<7}{r.what:27}{r.bmcs:>6}{r.seconds:>9.2f}{r.rate:>8.1f}{r.requests / r.bmcs:>9.1f}"
                      f"{r.requests / r.seconds:>7.0f}{1000 * r.sim_cpu / r.bmcs:>14.2f} / {1000 * r.cli_cpu / r.bmcs:.2f}")
            ratios = [c.rate / q.rate for c, q in zip(rows[0::3], rows[1::3], strict=True)]
            print("\nspeed-up (concurrent / sequential BMC/s) per round: "
                  + ", ".join(f"{x:.1f}x" for x in ratios)
                  + f"; median {statistics.median(ratios):.1f}x")
            print(f"median concurrent rate: {statistics.median(r.rate for r in rows[0::3]):.1f} BMC/s; "
                  f"nodes not ok: {len(failed)}"
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
