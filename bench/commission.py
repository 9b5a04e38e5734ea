"""Benchmark: how close does the commission flow get to the best possible schedule?

    .venv/bin/python bench/commission.py --nodes 64,256

For each fleet size it runs the real ``commission`` flow on a real Prefect server with
the real global concurrency limits, but with timed stand-ins for the stages
(bench/simstages.py), so what is measured is the orchestration. It prints the wall time,
the critical-path lower bound given the limits, their ratio, and the controller's peak
RSS. Target: ratio <= 1.10 at 256 nodes on 2 cores. Each size runs in a child process
(the stage stand-ins read their configuration at import time).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DURATIONS = {"discover": 1.0, "bios": 2.0, "install": 6.0, "configure": 2.0, "burnin": 10.0,
             "judge": 0.2, "record": 0.5, "admit": 1.0}
LIMITS = {"os-installs": 32, "bmc-sessions": 64, "burnin_per_rack": 4}
ORDER = ["discover", "bios", "install", "configure", "burnin", "judge", "record", "admit"]


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
    bounds.append(before("burnin") + math.ceil(fullest / limits["burnin_per_rack"]) * d["burnin"] + after("burnin"))
    # BMC sessions: all BMC work spread over the slots, then the quickest tail
    bmc_work = n * (d["discover"] + d["bios"] + d["install"])
    bounds.append(bmc_work / limits["bmc-sessions"] + after("install"))
    return max(bounds)


def child(n: int, rack_size: int) -> None:
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.commission import commission
    from flows.limits import ensure_limits
    ensure_limits({"os-installs": LIMITS["os-installs"], "bmc-sessions": LIMITS["bmc-sessions"]})
    # rack limits are made by the flow; set their size for this run
    ensure_limits({f"burnin-rack-r{r:02d}": LIMITS["burnin_per_rack"] for r in range(math.ceil(n / rack_size))})
    flow = commission.with_options(task_runner=ThreadPoolTaskRunner(max_workers=n))
    t = time.monotonic()
    rows = flow(site="bench")
    wall = time.monotonic() - t
    admitted = sum(1 for r in rows if r["verdict"] == "admitted")
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if os.environ.get("BRINGUP_BENCH_TRACE"):
        from bench import simstages
        Path(os.environ["BRINGUP_BENCH_TRACE"]).write_text(
            json.dumps({"t0": t, "t1": t + wall, "spans": simstages.TRACE}))
    print(json.dumps({"wall": wall, "admitted": admitted, "rss_mib": rss_mib}))


def where_time_went(trace: dict, durations: dict[str, float], limits: dict[str, int]) -> list[tuple[str, float, float]]:
    """(what, measured s, ideal s) for the parts of the run the install limit decides: the
    bound is the time to the first install, the install waves, and the tail after them."""
    t0, t1 = trace["t0"], trace["t1"]
    spans = [(n, st, a - t0, b - t0) for n, st, a, b in trace["spans"]]
    installs = sorted((a, b) for _n, st, a, b in spans if st == "install")
    if not installs:
        return []
    first, last_end = installs[0][0], max(b for _a, b in installs)
    slots = limits["os-installs"]
    busy = sum(b - a for a, b in installs)
    handoffs = max(1, len(installs) - min(slots, len(installs)))
    idle = slots * (last_end - first) - busy
    by_node: dict[str, dict[str, tuple[float, float]]] = {}
    for n, st, a, b in spans:
        by_node.setdefault(n, {})[st] = (a, b)
    waits = [v["burnin"][0] - v["configure"][1] for v in by_node.values() if "burnin" in v and "configure" in v]
    before = sum(durations[s] for s in ORDER[:ORDER.index("install")])
    after = sum(durations[s] for s in ORDER[ORDER.index("install") + 1:])
    return [
        ("flow start to first install", first, before),
        ("install waves (first start to last end)", last_end - first,
         math.ceil(len(installs) / slots) * durations["install"]),
        ("  idle install slot-seconds per hand-off", idle / handoffs, 0.0),
        ("last install end to flow end", (t1 - t0) - last_end, after),
        ("  mean wait configure end to burn-in start", sum(waits) / max(1, len(waits)), 0.0),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="64,256")
    ap.add_argument("--rack-size", type=int, default=16)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every stage duration (real installs take minutes, burn-ins hours)")
    ap.add_argument("--prefect-db", choices=("postgres", "sqlite"), default="postgres",
                    help="Prefect server database: the lab's PostgreSQL (default) or SQLite")
    ap.add_argument("--trace", action="store_true",
                    help="also print where the time went (first install, install waves, tail)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.rack_size)
        return

    from lab.paths import HOST, PG_PORT, LabPaths
    from lab.postgres import SUPERUSER, Postgres
    from lab.prefect_server import PrefectServer
    paths = LabPaths.default()
    paths.ensure()
    home = Path(tempfile.mkdtemp(prefix="bringup-bench-prefect-"))
    if args.prefect_db == "postgres":
        # SQLite serialises writes: with many task runs taking and releasing slots at
        # once, single requests stall for seconds (measured); PostgreSQL does not
        pg = Postgres(paths)
        pg.start()
        pg.drop("prefect_bench")
        pg.create("prefect_bench")
        os.environ["BRINGUP_PREFECT_DATABASE_URL"] = (
            f"postgresql+asyncpg://{SUPERUSER}:{pg.password}@{HOST}:{PG_PORT}/prefect_bench")
        # no database lock to queue for: slot writes may overlap (see flows.limits)
        os.environ["BRINGUP_SLOT_WRITES"] = "parallel"
    server = PrefectServer(paths, name="prefect-bench", home=home, port=54209)
    server.start()
    durations = {k: v * args.scale for k, v in DURATIONS.items()}
    results, traces = [], {}
    try:
        for n in [int(x) for x in args.nodes.split(",")]:
            trace_file = home / f"trace-{n}.json"
            env = {**os.environ, **server.env(), "BRINGUP_STAGES": "bench.simstages",
                   **({"BRINGUP_BENCH_TRACE": str(trace_file)} if args.trace else {}),
                   "BRINGUP_BENCH": json.dumps({"nodes": n, "rack_size": args.rack_size, "durations": durations}),
                   "PREFECT_LOGGING_LEVEL": "WARNING"}
            r = subprocess.run([sys.executable, __file__, "--child", str(n), "--rack-size", str(args.rack_size)],
                               env=env, capture_output=True, text=True, cwd=REPO)
            if r.returncode != 0:
                print(r.stdout[-3000:], r.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"run with {n} nodes failed")
            out = json.loads(r.stdout.strip().splitlines()[-1])
            lb = lower_bound(n, args.rack_size, durations, LIMITS)
            results.append((n, out["wall"], lb, out["wall"] / lb, out["rss_mib"], out["admitted"]))
            if args.trace:
                traces[n] = json.loads(trace_file.read_text())
    finally:
        server.stop()
    print(f"stage seconds: {durations}; limits: {LIMITS}; rack size {args.rack_size}; "
          f"Prefect database: {args.prefect_db}")
    print(f"{'nodes':>6} {'wall s':>8} {'bound s':>8} {'ratio':>6} {'peak RSS MiB':>13} {'admitted':>9}")
    for n, wall, lb, ratio, rss, adm in results:
        print(f"{n:>6} {wall:>8.1f} {lb:>8.1f} {ratio:>6.3f} {rss:>13.0f} {adm:>9}")
    for n, trace in traces.items():
        print(f"\nwhere the time went, {n} nodes:")
        print(f"{'':48} {'measured s':>11} {'ideal s':>8}")
        for what, got, ideal in where_time_went(trace, durations, LIMITS):
            print(f"{what:48} {got:>11.2f} {ideal:>8.2f}")


if __name__ == "__main__":
    main()
