"""What NetBox's CPU went on, request by request: the lab's per-request CPU log summed by
endpoint.

    BRINGUP_LAB_NETBOX_CPU_LOG=/tmp/nb.log .venv/bin/pytest ... tests/integration/flows/test_commission.py
    .venv/bin/python bench/netbox_cpu_log.py /tmp/nb.log [--db netbox_flow8_gw0] [--top 20]

Every lab NetBox server started with ``BRINGUP_LAB_NETBOX_CPU_LOG`` set (the lab's WSGI
entry point, lab/netbox_server.py) appends a line a request: the CPU its thread spent,
the wall time, the database, the method, path and query. Thread CPU barely moves with
load (unlike latency), so two runs of the same scenario compare on a busy machine. Ids in
paths are folded (``/api/dcim/devices/{id}/``). Prints a table, biggest CPU first, and a
last line ``netbox_cpu_log: requests N cpu_s C``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ID = re.compile(r"/\d+/")


@dataclass(frozen=True)
class Request:
    cpu_ms: float
    wall_ms: float
    db: str
    method: str
    endpoint: str


def parse(line: str) -> Request | None:
    """One log line; None for a line that is not one (a torn or foreign line is skipped,
    and counted by the caller)."""
    parts = line.split()
    if len(parts) < 6:
        return None
    try:
        cpu, wall = float(parts[1]), float(parts[2])
    except ValueError:
        return None
    return Request(cpu, wall, parts[3], parts[4], ID.sub("/{id}/", parts[5]))


def summary(requests: list[Request]) -> list[tuple[str, int, float, float]]:
    """(method and endpoint, requests, CPU seconds, mean CPU ms), biggest CPU first."""
    count: dict[str, int] = defaultdict(int)
    cpu: dict[str, float] = defaultdict(float)
    for r in requests:
        key = f"{r.method} {r.endpoint}"
        count[key] += 1
        cpu[key] += r.cpu_ms
    rows = [(k, count[k], cpu[k] / 1000, cpu[k] / count[k]) for k in count]
    return sorted(rows, key=lambda row: -row[2])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--db", help="only this NetBox database's requests")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    if not args.log.is_file():
        raise SystemExit(f"no log at {args.log}: start the lab's NetBox servers with "
                         f"BRINGUP_LAB_NETBOX_CPU_LOG={args.log} in their environment")
    requests, skipped = [], 0
    for line in args.log.read_text(errors="replace").splitlines():
        r = parse(line)
        if r is None:
            skipped += 1
        elif not args.db or r.db == args.db:
            requests.append(r)
    rows = summary(requests)
    print(f"{'CPU-s':>8} {'requests':>8} {'ms each':>8}  request")
    for key, n, cpu_s, ms in rows[:args.top]:
        print(f"{cpu_s:8.1f} {n:8d} {ms:8.1f}  {key}")
    if skipped:
        print(f"({skipped} lines that are not requests skipped)", file=sys.stderr)
    total = sum(r.cpu_ms for r in requests) / 1000
    print(f"netbox_cpu_log: requests {len(requests)} cpu_s {total:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
