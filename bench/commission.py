"""Benchmark: how close does a commission run get to the best possible schedule, with one
and with two workers, and what does it cost in memory?

    .venv/bin/python bench/commission.py --nodes 1000 --workers 1,2

It runs the real ``commission`` flow (and its ``commission-batch`` child runs on real
Prefect process workers) on a Prefect server configured as the lab's default (PostgreSQL
on the lab's cluster, a database of its own), with the real global concurrency limits
and the real lifecycle engine; only the step functions sleep (bench/simruntime.py), so
what is measured is the orchestration. With W workers the run is split into W child runs
of whole racks. It prints wall time, the critical-path lower bound given the limits,
their ratio, and the peak of the summed RSS of the controller, the workers and their
flow-run processes, side by side per worker count. Targets (2 cores): ratio <= 1.05 at
1,000 nodes; summed peak RSS <= 600 MB.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DURATIONS = {"discover": 1.0, "bios": 2.0, "install": 6.0, "configure": 2.0, "burn_in": 10.0,
             "judge": 0.7, "join": 1.0}
LIMITS = {"os-installs": 32, "bmc-sessions": 64, "burnin_per_rack": 4}
ORDER = ["discover", "bios", "install", "configure", "burn_in", "judge", "join"]
POOL = "bench-batch"


def lower_bound(n: int, rack_size: int, d: dict[str, float], limits: dict[str, int]) -> float:
    """A schedule can be no shorter than any of these necessary conditions."""
    chain = sum(d[s] for s in ORDER)
    before = lambda stage: sum(d[s] for s in ORDER[:ORDER.index(stage)])
    after = lambda stage: sum(d[s] for s in ORDER[ORDER.index(stage) + 1:])
    bounds = [chain]
    # OS installs: ceil(n / limit) waves of installs between the fastest before and after
    bounds.append(before("install") + math.ceil(n / limits["os-installs"]) * d["install"] + after("install"))
    # burn-ins per rack, the fullest rack decides
    fullest = min(rack_size, n)
    bounds.append(before("burn_in") + math.ceil(fullest / limits["burnin_per_rack"]) * d["burn_in"]
                  + after("burn_in"))
    # BMC sessions: all BMC work spread over the slots, then the quickest tail
    bmc_work = n * (d["discover"] + d["bios"] + d["install"])
    bounds.append(bmc_work / limits["bmc-sessions"] + after("install"))
    return max(bounds)


# --- memory ---------------------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return kids


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_mib(roots: list[int]) -> float:
    kids, seen, todo, total = _children(), set(), list(roots), 0
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _rss_kib(pid)
        todo.extend(kids.get(pid, []))
    return total / 1024


class PeakRss(threading.Thread):
    """Samples the summed RSS of some process trees every 0.25 s; keeps the peak."""

    def __init__(self, roots: list[int]) -> None:
        super().__init__(daemon=True)
        self.roots, self.peak, self._halt = roots, 0.0, threading.Event()

    def run(self) -> None:
        while not self._halt.wait(0.25):
            self.peak = max(self.peak, tree_rss_mib(self.roots))

    def stop(self) -> float:
        self._halt.set()
        self.join()
        return max(self.peak, tree_rss_mib(self.roots))


# --- one measured run (a child process of the bench) -------------------------------------------
def start_workers(pool: str, names: list[str], home: Path, env: dict[str, str] | None = None) -> list[int]:
    """Prefect process workers of ``pool`` (made if missing), one run at a time each,
    polling every second; their pids, once all are online."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound

    from flows.batches import online_workers
    from lab import procs
    with get_client(sync_client=True) as client:
        try:
            client.read_work_pool(pool)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=pool, type="process"))
    exe = Path(sys.executable).parent / "prefect"
    pids = [procs.start(name, [str(exe), "worker", "start", "--pool", pool, "--type", "process", "--name", name,
                               "--limit", "1"], run_dir=home / "run", log_dir=home / "logs",
                        env={"PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_WORKER_PREFETCH_SECONDS": "2",
                             "PREFECT_LOGGING_LEVEL": "WARNING", **(env or {})}, cwd=REPO)
            for name in names]
    procs.wait_until(lambda: online_workers(pool) >= len(names), timeout=120, what="bench workers",
                     log=home / "logs" / f"{names[0]}.log")
    return pids


def child(n: int, workers: int, rack_size: int, durations: dict[str, float], trace: bool) -> None:
    from prefect.task_runners import ThreadPoolTaskRunner

    from bench.simflow import bench_batch
    from bench.simruntime import FileRecords, SimRuntime, node_name
    from flows import runtime
    from flows.commission import commission
    from flows.deploy import ensure_work_pools
    from flows.limits import ensure_limits
    from lab import procs

    home = Path(tempfile.mkdtemp(prefix="bringup-bench-sim-"))
    trace_dir = home / "trace"
    trace_dir.mkdir()
    FileRecords(home).create([node_name(i, rack_size) for i in range(n)])
    racks = math.ceil(n / rack_size)
    ensure_limits({"os-installs": LIMITS["os-installs"], "bmc-sessions": LIMITS["bmc-sessions"]})
    ensure_limits({f"burnin-rack-r{r:03d}": LIMITS["burnin_per_rack"] for r in range(racks)})
    ensure_work_pools()
    names = [f"bench-worker-{i}" for i in range(1, workers + 1)]
    pids = start_workers(POOL, names, home)   # makes the work pool the deployment names
    sim = {"home": str(home), "durations": durations, "trace": str(trace_dir) if trace else None}
    bench_batch.from_source(source=str(REPO), entrypoint="bench/simflow.py:bench_batch").deploy(
        name="bench", work_pool_name=POOL, parameters={"sim": sim}, print_next_steps=False)
    runtime.use(SimRuntime(**sim))
    rss = PeakRss([os.getpid(), *pids])
    rss.start()
    flow = commission.with_options(task_runner=ThreadPoolTaskRunner(max_workers=64))
    t = time.monotonic()
    try:
        rows = flow(site="bench", batches=workers, batch_deployment="bench-batch/bench")
    finally:  # a failed run must not leave workers behind to take the next run's batches
        wall = time.monotonic() - t
        peak = rss.stop()
        for name in names:
            procs.stop(name, home / "run")
    spans = []
    for f in trace_dir.glob("*.jsonl"):
        spans += [json.loads(line) for line in f.read_text().splitlines()]
    admitted = sum(1 for r in rows if r["verdict"] == "admitted")
    print(json.dumps({"wall": wall, "admitted": admitted, "rss_mib": peak, "spans": spans, "t0": time.time() - wall}))
    shutil.rmtree(home, ignore_errors=True)


def where_time_went(spans: list, t0: float, wall: float, durations: dict[str, float]) -> list[tuple[str, float, float]]:
    """(what, measured s, ideal s): time to the first install, the install waves, the tail."""
    installs = sorted((a - t0, b - t0) for _n, st, a, b in spans if st == "install")
    if not installs:
        return []
    first, last_end = installs[0][0], max(b for _a, b in installs)
    slots = LIMITS["os-installs"]
    before = sum(durations[s] for s in ORDER[:ORDER.index("install")])
    after = sum(durations[s] for s in ORDER[ORDER.index("install") + 1:])
    return [("flow start to first install", first, before),
            ("install waves (first start to last end)", last_end - first,
             math.ceil(len(installs) / slots) * durations["install"]),
            ("last install end to flow end", wall - last_end, after)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="1000", help="comma-separated fleet sizes")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--rack-size", type=int, default=16)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every step duration (real installs take minutes, burn-ins hours)")
    ap.add_argument("--trace", action="store_true", help="also print where the time went")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-workers", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    durations = {k: v * args.scale for k, v in DURATIONS.items()}
    if args.child:
        child(args.child, args.child_workers, args.rack_size, durations, args.trace)
        return

    from lab.paths import LabPaths
    from lab.postgres import Postgres
    from lab.prefect_server import PrefectServer
    paths = LabPaths.default()
    paths.ensure()
    # the lab's default server settings (PostgreSQL), on a database and port of its own so
    # the lab's own server and its history are left alone
    server = PrefectServer(paths, name="prefect-bench", home=Path(tempfile.mkdtemp(prefix="bringup-bench-")),
                           port=54209)
    pg = Postgres(paths)
    pg.start()
    pg.drop(server.db_name)
    server.start()
    results, traces = [], {}
    try:
        for n in [int(x) for x in args.nodes.split(",")]:
            for w in [int(x) for x in args.workers.split(",")]:
                env = {**os.environ, **server.env(), "PREFECT_LOGGING_LEVEL": "WARNING"}
                r = subprocess.run([sys.executable, __file__, "--child", str(n), "--child-workers", str(w),
                                    "--rack-size", str(args.rack_size), "--scale", str(args.scale),
                                    *(["--trace"] if args.trace else [])],
                                   env=env, capture_output=True, text=True, cwd=REPO, check=False)
                if r.returncode != 0:
                    print(r.stdout[-3000:], r.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"run with {n} nodes on {w} worker(s) failed")
                out = json.loads(r.stdout.strip().splitlines()[-1])
                lb = lower_bound(n, args.rack_size, durations, LIMITS)
                results.append((n, w, out["wall"], lb, out["wall"] / lb, out["rss_mib"], out["admitted"]))
                traces[(n, w)] = out
    finally:
        server.stop()
    print(f"step seconds: {durations}; limits: {LIMITS}; rack size {args.rack_size}; "
          f"Prefect on PostgreSQL (the lab's default)")
    print(f"{'nodes':>6} {'workers':>8} {'wall s':>8} {'bound s':>8} {'ratio':>6} {'peak RSS MiB (sum)':>19} "
          f"{'admitted':>9}")
    for n, w, wall, lb, ratio, rss, adm in results:
        print(f"{n:>6} {w:>8} {wall:>8.1f} {lb:>8.1f} {ratio:>6.3f} {rss:>19.0f} {adm:>9}")
    if args.trace:
        for (n, w), out in traces.items():
            print(f"\nwhere the time went, {n} nodes, {w} worker(s):")
            for what, got, ideal in where_time_went(out["spans"], out["t0"], out["wall"], durations):
                print(f"  {what:44} {got:>9.2f} s (ideal {ideal:.2f})")


if __name__ == "__main__":
    main()
