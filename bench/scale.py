"""Benchmark: what the pipeline costs per node on the real services, at fleet scale (issue #25).

    .venv/bin/python bench/scale.py --nodes 100,300,1000 --workers 1,2

The real ``commission`` flow runs through a real deployment (its ``commission-batch``
share as child runs on real Prefect process workers), against a real NetBox 4.7 (the lab's
release, on a database and port of its own, seeded with N planned nodes by the lab's
seeder) and a real Prefect server (the lab's default settings, a database of its own).
Only the hardware-facing step bodies are timed stand-ins (bench/scaleruntime.py): every
NetBox read and write, lease, journal entry and evidence document is the real one.

Per size it prints: the seeding's time (measured once per size, apart from the runs); per
worker count the wall time against the critical-path bound and their ratio; NetBox
requests per node by method and endpoint, counted at the adapter (every flow run's
``*-netbox-requests`` artifact plus the controller's own), with the writes checked against
the object changes NetBox recorded meanwhile; CPU seconds per node-step of the controller,
the workers (with their flow-run processes), NetBox, the Prefect server and PostgreSQL
separately; the peak of their summed RSS. The last line of each run reads
``scale: nodes N ratio R netbox_requests_per_node Q cpu_ms_per_node_step C`` (C: our own
processes, the controller and the workers). On demand only, never a timed test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.commission import PeakRss, _children, start_workers

#: seconds each stand-in takes (``fabric_test``: the pool's test, once per share of the run)
DURATIONS = {"discover": 1.0, "firmware": 0.5, "bios": 2.0, "install": 6.0, "configure": 2.0, "burn_in": 10.0,
             "judge": 0.7, "fabric_test": 3.0, "fabric": 0.0, "share": 0.5, "join": 1.0, "gate": 1.0}
LIMITS = {"os-installs": 32, "bmc-sessions": 64, "burnin_per_rack": 4}
BEFORE_FABRIC = ["discover", "firmware", "bios", "install", "configure", "burn_in", "judge"]
AFTER_FABRIC = ["fabric", "share", "join", "gate"]
BMC_STEPS = ["discover", "firmware", "bios", "install"]
STEPS_PER_NODE = len(BEFORE_FABRIC) + len(AFTER_FABRIC)
SITE, POOL, SKU = "scale", "train-h100", "hgx-h100-80gb"
NETBOX_NAME, NETBOX_PORT, NETBOX_DB, REDIS_DB = "netbox-scale", 28097, "bringup_scale", 14
PREFECT_PORT, WORK_POOL = 54219, "scale-batch"


def lower_bound(n: int, rack_size: int, d: dict[str, float], limits: dict[str, int]) -> float:
    """No schedule is shorter: the slowest of the necessary conditions up to the pools'
    fabric test (every node of a share reaches it before it runs), then the test and the
    chain after it."""
    before = lambda s: sum(d[x] for x in BEFORE_FABRIC[:BEFORE_FABRIC.index(s)])
    after = lambda s: sum(d[x] for x in BEFORE_FABRIC[BEFORE_FABRIC.index(s) + 1:])
    to_fabric = [sum(d[x] for x in BEFORE_FABRIC),
                 before("install") + math.ceil(n / limits["os-installs"]) * d["install"] + after("install"),
                 before("burn_in") + math.ceil(min(rack_size, n) / limits["burnin_per_rack"]) * d["burn_in"]
                 + after("burn_in"),
                 n * sum(d[x] for x in BMC_STEPS) / limits["bmc-sessions"] + after("install")]
    return max(to_fabric) + d["fabric_test"] + sum(d[x] for x in AFTER_FABRIC)


# --- CPU of process trees, from /proc -------------------------------------------------------------
def _cpu_s(pid: int, reaped: bool) -> float:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if reaped else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(root: int | None) -> float:
    """CPU of ``root`` and its live descendants, with what each reaped (a worker's ended
    flow-run processes, a gunicorn master's recycled workers)."""
    if root is None:
        return 0.0
    kids, total, todo, seen = _children(), 0.0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _cpu_s(pid, reaped=True)
        todo.extend(kids.get(pid, []))
    return total


# --- the fleet --------------------------------------------------------------------------------------
def fleet_yaml(n: int, rack_size: int) -> str:
    import yaml
    nodes = []
    for i in range(n):
        r, k = divmod(i, rack_size)
        nodes.append({"name": f"scale-r{r:03d}-n{k:02d}", "rack": f"r{r:03d}", "sku": SKU, "pool": POOL,
                      "bmc_address": f"127.{100 + r // 250}.{r % 250}.{k + 1}",
                      "address": f"127.{200 + r // 250}.{r % 250}.{k + 1}"})
    return yaml.safe_dump({"site": SITE, "region": "bench", "nodes": nodes,
                           "pools": {POOL: {"workload": "training", "sharing": "exclusive", "fabric": "ib-ndr400"}}})


# --- one measured run (a child process of the bench) -----------------------------------------------
def child(config: str, n: int, workers: int, durations: dict[str, float], out: Path) -> None:
    """Register the batch deployment, start ``workers`` workers, run ``commission`` in this
    process (the controller), and write what was measured to ``out``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.task_runners import ThreadPoolTaskRunner

    from bench.scaleflow import scale_batch
    from bench.scaleruntime import ScaleRuntime
    from bringup.netbox.request_count import COUNT
    from flows import runtime
    from flows.commission import commission
    from flows.deploy import ensure_work_pools
    from flows.limits import burnin_limit, ensure_limits
    from lab import procs

    home = Path(tempfile.mkdtemp(prefix="bringup-scale-run-"))
    racks = sorted({s.rack for s in ScaleRuntime(config, durations).select(site=SITE)})
    ensure_limits({"os-installs": LIMITS["os-installs"], "bmc-sessions": LIMITS["bmc-sessions"]})
    ensure_limits({burnin_limit(r): LIMITS["burnin_per_rack"] for r in racks})
    ensure_work_pools()
    names = [f"scale-worker-{i}" for i in range(1, workers + 1)]
    pids = start_workers(WORK_POOL, names, home, env={"BRINGUP_CONFIG": config})   # makes the work pool
    scale = {"config": config, "durations": durations}
    scale_batch.from_source(source=str(REPO), entrypoint="bench/scaleflow.py:scale_batch").deploy(
        name="scale", work_pool_name=WORK_POOL, parameters={"scale": scale}, print_next_steps=False)
    runtime.use(ScaleRuntime(config, durations))
    workers_cpu0 = sum(tree_cpu_s(p) for p in pids)
    own0 = os.times()
    sent0 = COUNT.snapshot()
    flow = commission.with_options(task_runner=ThreadPoolTaskRunner(max_workers=64))
    t = time.monotonic()
    started = time.time()
    try:
        rows = flow(site=SITE, batches=workers, batch_deployment=f"{WORK_POOL}/scale")
    finally:  # a failed run must not leave workers behind to take the next run's batches
        wall = time.monotonic() - t
        own1 = os.times()
        workers_cpu = sum(tree_cpu_s(p) for p in pids) - workers_cpu0
        for name in names:
            procs.stop(name, home / "run")
    controller_requests = COUNT.snapshot() - sent0
    requests = Counter({f"{m} {e}": c for (m, e), c in controller_requests.items()})
    with get_client(sync_client=True) as client:   # every flow run's own count (the child runs')
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(like_="netbox-requests")))
    for a in arts:
        if a.created is None or a.created.timestamp() < started - 1:
            continue
        data = json.loads(a.data) if isinstance(a.data, str) else a.data
        for row in data or []:
            if "method" in row:
                requests[f"{row['method']} {row['endpoint']}"] += int(row["requests"])
    out.write_text(json.dumps({
        "wall": wall, "admitted": sum(1 for r in rows if r["verdict"] == "admitted"), "nodes": len(rows),
        "controller_cpu": (own1.user - own0.user) + (own1.system - own0.system), "workers_cpu": workers_cpu,
        "requests": dict(requests)}))


# --- the parent: services, seeding, runs, table ---------------------------------------------------
class Services:
    """The lab's PostgreSQL and Redis, a NetBox of the bench's own and a Prefect server of
    its own (both on databases of their own, so the lab's are left alone)."""

    def __init__(self) -> None:
        from lab.netbox_server import NetBox as NetBoxServer
        from lab.paths import LabPaths
        from lab.postgres import Postgres
        from lab.prefect_server import PrefectServer
        from lab.redis import Redis
        self.paths = LabPaths.default()
        self.paths.ensure()
        self.pg, self.redis = Postgres(self.paths), Redis(self.paths)
        self.netbox = NetBoxServer(self.paths, self.pg)
        self.prefect = PrefectServer(self.paths, name="prefect-scale",
                                     home=Path(tempfile.mkdtemp(prefix="bringup-scale-prefect-")), port=PREFECT_PORT)
        self.token_file = self.paths.secrets / "netbox-token"
        #: what start() found down and started, so stop() stops those and no more
        self.started: list = []

    def start(self) -> None:
        from lab import procs
        from lab.paths import HOST, PG_PORT, REDIS_PORT
        # what the bench starts it stops: a lab's PostgreSQL left behind holds the port the
        # next `make test` or `make demo` of another lab home needs (seen)
        self.started = [svc for svc, port in ((self.pg, PG_PORT), (self.redis, REDIS_PORT))
                        if not procs.port_open(HOST, port)]
        self.pg.start()
        self.redis.start()
        self.netbox.ensure_venv()
        self.netbox.write_config()
        self.netbox.ensure_pristine()
        self.fresh(None)
        self.netbox.start(name=NETBOX_NAME, port=NETBOX_PORT, db=NETBOX_DB, redis_db=REDIS_DB, workers=2)
        self.pg.drop(self.prefect.db_name)
        self.prefect.start()

    def stop(self) -> None:
        self.netbox.stop(NETBOX_NAME)
        self.prefect.stop()
        for svc in reversed(self.started):
            svc.stop()

    def fresh(self, template: str | None) -> None:
        """The bench NetBox's database as a clone of ``template`` (None: the pristine one)."""
        from lab.netbox_server import PRISTINE_DB
        from lab.paths import HOST, REDIS_PORT
        self.pg.clone(template or PRISTINE_DB, NETBOX_DB)
        for db in (REDIS_DB, REDIS_DB + 1):
            subprocess.run(["redis-cli", "-h", HOST, "-p", str(REDIS_PORT), "-n", str(db), "FLUSHDB"],
                           capture_output=True, check=False)

    def adapter(self):
        from bringup.netbox.adapter import NetBox, connect
        return NetBox(connect(self.netbox.url(NETBOX_PORT), self.token_file.read_text().strip()))

    def pids(self) -> dict[str, int | None]:
        from lab import procs
        return {"netbox": procs.pid_of(self.paths.run, NETBOX_NAME),
                "prefect server": procs.pid_of(self.paths.run, "prefect-scale"),
                "postgresql": procs.pid_of(self.paths.run, "postgres") or _postmaster(self.pg.data)}

    def settings(self, folder: Path, renew_every: float | None = None, max_inflight: int | None = None) -> Path:
        path = folder / "scale-settings.yaml"
        path.write_text(f"site: {SITE}\nnetbox_url: {self.netbox.url(NETBOX_PORT)}\n"
                        f"netbox_token_file: {self.token_file}\nprefect_api_url: {self.prefect.api_url}\n"
                        f"spool_dir: {folder / 'spool'}\n"
                        + (f"lease_renew_every_s: {renew_every}\n" if renew_every else "")
                        + (f"netbox_max_inflight: {max_inflight}\n" if max_inflight else ""))
        return path


def _postmaster(data: Path) -> int | None:
    try:
        return int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def object_changes(nb) -> int:
    resp = nb._raw("GET", "core/object-changes/", params={"limit": "1", "brief": "1"})
    return int(resp.json()["count"])


def seed_fleet(svc: Services, n: int, rack_size: int, folder: Path, template: str) -> float:
    """N planned nodes in a fresh NetBox (bringup's schema, the lab's seeder), kept as
    database ``template`` for every run at this size; the seconds it took."""
    from bringup.netbox.schema import load_schema
    from bringup.netbox.schema_apply import apply_schema
    from bringup.sku import load_skus
    from lab.fleet import load_fleet
    from lab.seed import seed
    svc.fresh(None)
    nb = svc.adapter()
    fleet_file = folder / f"fleet-{n}.yaml"
    fleet_file.write_text(fleet_yaml(n, rack_size))
    t = time.monotonic()
    apply_schema(nb, load_schema())
    seed(nb, load_fleet(fleet_file), load_skus())
    took = time.monotonic() - t
    svc.pg.clone(NETBOX_DB, template)
    return took


def run_once(svc: Services, config: Path, n: int, workers: int, durations: dict[str, float],
             folder: Path) -> dict:
    nb = svc.adapter()
    changes0 = object_changes(nb)
    pids = svc.pids()
    cpu0 = {k: tree_cpu_s(p) for k, p in pids.items()}
    out = folder / f"run-{n}-{workers}.json"
    env = {**os.environ, **svc.prefect.env(), "PREFECT_LOGGING_LEVEL": "WARNING", "BRINGUP_CONFIG": str(config)}
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(n), "--child-workers", str(workers),
                             "--child-config", str(config), "--child-out", str(out),
                             "--child-durations", json.dumps(durations)],
                            env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rss = PeakRss([proc.pid, *[p for p in pids.values() if p]])
    rss.start()
    log, _ = proc.communicate()
    peak = rss.stop()
    if proc.returncode != 0:
        print(log[-4000:], file=sys.stderr)
        raise SystemExit(f"run with {n} nodes on {workers} worker(s) failed")
    r = json.loads(out.read_text())
    r["cpu"] = {"controller": r.pop("controller_cpu"), "workers": r.pop("workers_cpu"),
                **{k: tree_cpu_s(p) - cpu0[k] for k, p in pids.items()}}
    r["object_changes"] = object_changes(nb) - changes0
    r["rss_mib"] = peak
    r["bound"] = lower_bound(n, LIMITS_RACK[0], durations, LIMITS)
    return r


LIMITS_RACK = [16]


def report(n: int, workers: int, r: dict, seed_s: float) -> None:
    steps = n * STEPS_PER_NODE
    req = Counter(r["requests"])
    total = sum(req.values())
    writes = sum(c for k, c in req.items() if k.split()[0] in ("POST", "PATCH", "PUT", "DELETE")
                 and "graphql" not in k)
    ratio = r["wall"] / r["bound"]
    own_ms = (r["cpu"]["controller"] + r["cpu"]["workers"]) / steps * 1000
    print(f"\n== {n} nodes, {workers} worker(s): wall {r['wall']:.1f} s, bound {r['bound']:.1f} s, ratio {ratio:.2f}; "
          f"admitted {r['admitted']}/{r['nodes']}; " + ("seeded by an earlier run" if seed_s != seed_s else f"seeding {seed_s:.1f} s"))
    print(f"NetBox requests: {total} ({total / n:.1f} a node); writes {writes}, object changes NetBox recorded "
          f"{r['object_changes']}")
    for k, c in req.most_common():
        print(f"  {c / n:7.2f} a node  {k}")
    print(f"CPU per node-step ({steps} node-steps), ms: " + ", ".join(
        f"{k} {v / steps * 1000:.1f}" for k, v in r["cpu"].items()) + f"; peak summed RSS {r['rss_mib']:.0f} MiB")
    print(f"scale: nodes {n} ratio {ratio:.2f} netbox_requests_per_node {total / n:.1f} "
          f"cpu_ms_per_node_step {own_ms:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="100,300,1000", help="comma-separated fleet sizes")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--rack-size", type=int, default=16)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every stand-in's duration")
    ap.add_argument("--reuse-seed", action="store_true",
                    help="keep each size's seeded database for the next bench run and use one a run kept "
                         "(runs of two versions of the code side by side start from the same NetBox)")
    ap.add_argument("--renew-every", type=float, default=None,
                    help="the settings' lease_renew_every_s (default: bringup's, 71.5 s)")
    ap.add_argument("--max-inflight", type=int, default=None,
                    help="the settings' netbox_max_inflight: requests a process has at NetBox at once "
                         "(default: bringup's, 4; 256 is as good as no bound)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-workers", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--child-config", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--child-durations", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child_config, args.child, args.child_workers, json.loads(args.child_durations),
              Path(args.child_out))
        return
    LIMITS_RACK[0] = args.rack_size
    durations = {k: v * args.scale for k, v in DURATIONS.items()}
    folder = Path(tempfile.mkdtemp(prefix="bringup-scale-"))
    svc = Services()
    svc.start()
    config = svc.settings(folder, args.renew_every, args.max_inflight)
    print(f"stand-in seconds: {durations}; limits: {LIMITS}; rack size {args.rack_size}; "
          f"lease renewed every {args.renew_every or 'default'} s; "
          f"NetBox requests in flight per process: {args.max_inflight or 'default'}; "
          f"NetBox {svc.netbox.url(NETBOX_PORT)} (2 gunicorn workers), Prefect on PostgreSQL", flush=True)
    try:
        for n in [int(x) for x in args.nodes.split(",")]:
            template = f"{NETBOX_DB}_seeded_{n}_{args.rack_size}"
            if args.reuse_seed and svc.pg.exists(template):
                seed_s = float("nan")
                print(f"\n{n} nodes: the seeded database an earlier run kept ({template})", flush=True)
            else:
                seed_s = seed_fleet(svc, n, args.rack_size, folder, template)
                print(f"\nseeded {n} nodes in {seed_s:.1f} s ({seed_s / n * 1000:.0f} ms a node)", flush=True)
            for w in [int(x) for x in args.workers.split(",")]:
                svc.fresh(template)
                r = run_once(svc, config, n, w, durations, folder)
                report(n, w, r, seed_s)
                sys.stdout.flush()
            if not args.reuse_seed:
                svc.pg.drop(template)
    finally:
        svc.stop()


if __name__ == "__main__":
    main()
