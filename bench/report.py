"""Benchmark: the fleet's tables and the GPU-hours ledger from a large synthetic history.

    .venv/bin/python bench/report.py --nodes 10000 --burnins 5            # digests, as recorded today
    .venv/bin/python bench/report.py --nodes 10000 --burnins 5 --compare  # and the same without digests

Every node gets ``--burnins`` burn-ins, each a burn-in document and a verdict stored as
:mod:`bringup.netbox.evidence` journal entries (the codec's own blocks, SHA-256 and all) with
the digest the ``burn_in`` and ``judge`` steps record beside them
(:func:`bringup.acceptance.digest.with_digest`), and a stage timeline from planned through
re-burn-ins (one run in seven fails and goes through quarantine and a forced restart). The
tables are read the way ``bringup report`` reads them: :func:`bringup.insight.fleetdata.load`
through an in-memory stand-in of the NetBox adapter (nodes, then journals and stage changes
in bulk), then :func:`bringup.insight.ledger.node_ledger` and
:func:`~bringup.insight.ledger.pool_ledger`. ``--mode legacy`` records the same documents
without digests (evidence from before them: every document is decoded and digested on read),
``--mode verify`` reads with digests but checks each against its decoded document. To keep
the synthesis itself out of the figures, documents come from a few dozen pre-encoded variants
(each still read on every use). Targets (2 cores): <= 10 s, <= 1 GB. Each mode prints
``report: nodes N burnins B mode M tables_s T cpu_s C peak_rss_mib R``; ``--compare`` runs
each mode in a process of its own (so each peak RSS is its own) and prints them together.
With ``--out DIR`` it also writes the full report there (:func:`bringup.insight.fleetreport.write`:
tables, plots, page, CSV and Parquet) and prints its time and the peak RSS after it.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bringup.acceptance.digest import with_digest
from bringup.insight.fleetdata import load
from bringup.insight.ledger import node_ledger, pool_ledger
from bringup.netbox.adapter import NodeRecord
from bringup.netbox.evidence import encode
from bringup.sku import load_skus

T0 = datetime(2026, 1, 5, tzinfo=UTC)
SKU = "hgx-h100-80gb"
MODES = ("digest", "legacy", "verify")
VARIANTS = 32
CHECKS = ("versions", "inventory", "ecc", "nvlink", "network", "dcgm", "gpu_burn", "nccl", "cpu_mem", "pcie",
          "clocks", "xid", "disk")


def agent_document(v: int, fail: bool) -> dict:
    """An agent result shaped like burnin/'s: 13 checks, metrics, per-GPU data for 8 GPUs."""
    temps = [55 + (v + i) % 12 for i in range(8)]
    if fail:
        temps[v % 8] = 96
    metrics = {
        "versions": {"mismatches": 0}, "inventory": {"gpu_count": 8, "memory_mib_min": 81559},
        "ecc": {"uncorrected_volatile": 0, "uncorrected_aggregate": v % 3, "corrected_volatile": v % 5,
                "retired_pages": 0, "row_remap_pending_gpus": 0, "row_remap_failure_gpus": 0},
        "nvlink": {"links_active": 144, "links_down": 0, "error_total": 0},
        "network": {"ib_ports": 8, "ports_down": 0, "ports_slow": 0, "min_rate_gbps": 400.0},
        "dcgm": {"tests_passed": 3, "tests_failed": 0, "tests_not_run": 0},
        "gpu_burn": {"faulty_gpus": 0, "errors_total": 0, "gpus_tested": 8, "gpus_no_work": 0,
                     "gflops_min": 50500.0 + 10 * v},
        "nccl": {"busbw_largest_gbps": 470.0 + v * 0.3, "wrong_total": 0, "oob_values": 0},
        "cpu_mem": {"stressors_failed": 0, "rc": 0},
        "pcie": {"downtrained_gpus": 0, "replay_total": 0, "gen_min": 5, "width_min": 16},
        "clocks": {"max_temp_c": max(temps), "thermal_slowdown_gpus": 0, "power_brake_gpus": 0},
        "xid": {"xid_count": 0, "fatal_count": 0, "codes": []},
        "disk": {"read_mib_s": 2500.0, "write_mib_s": 1800.0, "job_errors": 0},
    }
    data = {
        "inventory": {"gpus": [{"index": i, "serial": f"1654922{v:03d}{i:03d}", "uuid": f"GPU-{v:04x}-{i}",
                                "memory_mib": 81559} for i in range(8)]},
        "clocks": {"gpus": [{"gpu": i, "max_temp_c": temps[i], "max_power_w": 650.0 + i + v, "samples": 60,
                             "reasons_seen": []} for i in range(8)]},
        "gpu_burn": {"gflops": [50500.0 + 10 * v + 7 * i for i in range(8)], "gpus": {str(i): "OK" for i in range(8)},
                     "procd": [100] * 8, "errors": [0] * 8},
        "versions": {"installed": {"driver": "570.86.15", "cuda": "12.8"}},
    }
    checks = [{"name": c, "status": "fail" if fail and c == "clocks" else "pass", "summary": "", "duration_s": 60.0,
               "metrics": metrics[c], "data": data.get(c, {}),
               "findings": [{"code": "temperature_high", "message": f"GPU {v % 8}: 96 C under load", "gpu": v % 8}]
               if fail and c == "clocks" else []} for c in CHECKS]
    return {"schema_version": 1, "agent_version": "0.1.0", "node": {"name": "n", "hostname": "n"},
            "started": "2026-01-05T00:00:00Z", "finished": "2026-01-05T01:00:00Z", "plan": {"checks": list(CHECKS)},
            "checks": checks}


def variants(digests: bool) -> list[tuple[list[str], list[str], bool]]:
    """(burn-in entry texts, verdict entry texts, failed) per variant, encoded once, with the
    digests the steps record (``digests``) or without (evidence from before them)."""
    out = []
    for v in range(VARIANTS):
        fail = v % 7 == 3
        doc = agent_document(v, fail)
        verdict = {"status": "fail" if fail else "pass", "notes": [], "warnings": [],
                   "reasons": [{"check": "clocks", "code": "temperature_high", "message": f"GPU {v % 8}: 96 C under load",
                                "remediation": "check cooling", "blocking": "fail"}] if fail else [],
                   "figures": {"gpus": 8, "busbw_gbps": 470.0 + v * 0.3, "max_temp_c": 96 if fail else 66,
                               "driver": "570.86.15"}}
        stored = {"plan": {"profile": "full"}, "rc": 0, "document": doc}
        texts = []
        for kind, document, head in (("burnin", stored, "## Burn-in document"), ("verdict", verdict, "## Verdict")):
            blocks, _ = encode(kind, document)
            first = with_digest(kind, document, head) if digests else head
            texts.append([(first if n == 0 else f"{kind} evidence, part {n + 1}") + "\n\n" + b
                          for n, b in enumerate(blocks)])
        out.append((texts[0], texts[1], fail))
    return out


def timeline(n: int, burnins: int, kinds: list) -> tuple[list[dict], list[tuple[str, str]]]:
    """Node ``n``'s journal entries (as the adapter returns them) and stage changes."""
    hour = timedelta(hours=1)
    at = T0 + timedelta(minutes=n % 600)
    entries: list[dict] = []
    changes = [(at.isoformat(), "planned")]

    def move(stage: str, after: float) -> None:
        nonlocal at
        at += after * hour
        changes.append((at.isoformat(), stage))
    move("discovered", 2)
    move("provisioned", 1.5)
    for b in range(burnins):
        burnin, verdict, fail = kinds[(n * burnins + b) % VARIANTS]
        for texts, after in ((burnin, 1.0), (verdict, 0.05)):
            for t in texts:
                entries.append({"id": len(entries) + 1, "created": (at + after * hour).isoformat(), "kind": "info",
                                "comments": t})
        move("burned_in", 1.0)
        if fail:
            move("quarantined", 0.05)
            move("planned", 20)
            move("discovered", 0.5)
            move("provisioned", 1.5)
        else:
            move("validating", 0.05)
            move("active", 0.2)
            if b < burnins - 1:
                move("draining", 24 * 14)
                move("provisioned", 0.5)
    return entries, changes


class Fleet:
    """The NetBox adapter's fleet reads (:class:`bringup.netbox.adapter.NetBox`: ``nodes``,
    ``journals``, ``stage_changes``) over the synthetic history. A node's history depends only
    on its start minute and its variants, so the few thousand distinct ones are made before
    the clock starts, and the reads hand them out: the synthesis stays out of the figures."""

    def __init__(self, nodes: int, burnins: int, digests: bool, racks: int = 32) -> None:
        kinds = variants(digests)
        made: dict[tuple[int, int], tuple[list[dict], list[tuple[str, str]]]] = {}
        self.history = []
        for n in range(nodes):
            key = (n % 600, n * burnins % VARIANTS)
            if key not in made:
                made[key] = timeline(n, burnins, kinds)
            self.history.append(made[key])
        sku = load_skus()[SKU]
        self.records = [NodeRecord(id=n + 1, name=f"gpu-{n:05d}", site="bench", rack=f"r{n % racks:02d}",
                                   status="active", stage=self.history[n][1][-1][1], sku=sku,
                                   pool={"name": "inference" if n % 4 == 0 else "training"}, macs={},
                                   bmc_address="", address="", serial="", custom_fields={}, url="", tags=[])
                        for n in range(nodes)]

    def nodes(self, site: str | None = None, rack: str | None = None) -> list[NodeRecord]:
        return list(self.records)

    def journals(self, node_ids: list[int]) -> dict[int, list[dict]]:
        return {i: self.history[i - 1][0] for i in node_ids}

    def stage_changes(self, node_ids: list[int]) -> dict[int, list[tuple[str, str]]]:
        return {i: self.history[i - 1][1] for i in node_ids}

    def _raw(self, method: str, path: str, **kw) -> SimpleNamespace:
        """The adapter's generic read, which the GPUs out of service are read with: none
        in the synthetic fleet (one answer per chunk, as NetBox gives with no match)."""
        return SimpleNamespace(json=lambda: {"results": [], "next": None})


def run(args: argparse.Namespace) -> None:
    fleet = Fleet(args.nodes, args.burnins, digests=args.mode != "legacy")
    t, cpu = time.perf_counter(), time.process_time()
    fd = load(fleet, verify=args.mode == "verify")
    t_data = time.perf_counter() - t
    at = fd.stages["start"].max() + timedelta(days=1)
    per_node = node_ledger(fd.nodes, fd.stages, at, gpu_hour_usd=2.0)
    pools = pool_ledger(per_node)
    total, cpu = time.perf_counter() - t, time.process_time() - cpu
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(f"nodes {args.nodes}, burn-ins {args.burnins}, mode {args.mode}: {len(fd.runs)} runs, {len(fd.gpus)} GPU "
          f"rows, {len(fd.stages)} stage rows, {len(fd.findings)} findings")
    print(f"verdicts: {fd.runs['verdict'].value_counts().to_dict()}")
    print(f"all pools: {pools.loc['all', 'gpu_h']:,.0f} GPU-h, failed burn-in {pools.loc['all', 'failed_burnin_gpu_h']:,.0f} "
          f"GPU-h, {pools.loc['all', 'cost_per_accepted_usd']:,.0f} $ per accepted node")
    print(f"DataFrames {t_data:.2f} s, with the ledger {total:.2f} s ({cpu:.2f} s CPU); peak RSS {rss_mib:.0f} MiB "
          f"(targets: <= 10 s, <= 1024 MiB)")
    print(f"report: nodes {args.nodes} burnins {args.burnins} mode {args.mode} tables_s {total:.2f} cpu_s {cpu:.2f} "
          f"peak_rss_mib {rss_mib:.0f}", flush=True)
    if args.out:
        from bringup.insight.fleetreport import write
        t_report = time.perf_counter()
        index = write(args.out, fd, at=at, gpu_hour_usd=2.0)
        t_report = time.perf_counter() - t_report
        rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"report {index} ({index.stat().st_size / 2**20:.1f} MiB) in {t_report:.2f} s; "
              f"in all {total + t_report:.2f} s, peak RSS {rss_mib:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--burnins", type=int, default=5)
    ap.add_argument("--mode", choices=MODES, default="digest",
                    help="digest: as recorded today; legacy: evidence without digests; verify: digests checked")
    ap.add_argument("--compare", action="store_true", help="run legacy, then digest, each in its own process")
    ap.add_argument("--out", type=Path, help="also write the full report (page, CSV, Parquet) here, timed")
    args = ap.parse_args()
    if args.nodes < 1 or args.burnins < 0:
        ap.error("--nodes must be at least 1 and --burnins at least 0")
    if not args.compare:
        run(args)
        return
    lines = []
    for mode in ("legacy", "digest"):
        cmd = [sys.executable, __file__, "--nodes", str(args.nodes), "--burnins", str(args.burnins), "--mode", mode]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        print(out, end="")
        lines += [line for line in out.splitlines() if line.startswith("report: ")]
    print("\n".join(["side by side:", *lines]))


if __name__ == "__main__":
    main()
