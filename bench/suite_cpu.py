"""Where a command's CPU goes, every process it started included: run it under BSD
process accounting and print the CPU seconds by what spent them (issue #23).

    sudo .venv/bin/python bench/suite_cpu.py -- make test      # run and account
    .venv/bin/python bench/suite_cpu.py --file /tmp/pacct      # an existing record

Sampling ``/proc`` misses what lives a fraction of a second (each Ansible module run on a
node, each fork of ansible-playbook, each ssh client), and in this suite those were a
third of the CPU. The kernel writes an accounting record (acct v3: pid, parent pid,
start time, user and system CPU, command name) for every process that exits, so the
whole tree is there once the command ends. Needs root and ``accton`` (Debian's acct
package). Linux pids wrap (32,768 by default; the suite starts about 400,000 processes),
so a record's parent is the next record to exit with that pid that started no later.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: struct acct_v3 (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid,
#: btime, etime (float), utime, stime, mem, io, rw, minflt, majflt, swaps (comp_t), comm[16]
RECORD = struct.Struct("<BBHIIIIIIf8H16s")
HZ = 100                      # AHZ: comp_t ticks per second


def comp_t(value: int) -> int:
    """comp_t: 13-bit mantissa, 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * (value >> 13))


@dataclass
class Proc:
    pid: int
    ppid: int
    start: int
    comm: str
    cpu: float


def read(path: Path) -> list[Proc]:
    data = path.read_bytes()
    out = []
    for off in range(0, len(data) - RECORD.size + 1, RECORD.size):
        f = RECORD.unpack_from(data, off)
        if f[1] != 3:
            raise SystemExit(f"{path}: record {off // RECORD.size} is acct version {f[1]}, not 3")
        out.append(Proc(pid=f[6], ppid=f[7], start=f[8], comm=f[18].split(b"\0")[0].decode(errors="replace"),
                        cpu=(comp_t(f[10]) + comp_t(f[11])) / HZ))
    return out


def parents(procs: list[Proc]) -> list[int | None]:
    by_pid: dict[int, list[int]] = collections.defaultdict(list)
    for i, p in enumerate(procs):
        by_pid[p.pid].append(i)
    out: list[int | None] = []
    for i, p in enumerate(procs):
        later = by_pid.get(p.ppid, [])
        found = None
        for j in later[bisect.bisect_right(later, i):]:
            if procs[j].start <= p.start + 1:     # btime has a one-second grain
                found = j
                break
        out.append(found)
    return out


def chain(procs: list[Proc], up: list[int | None], i: int, depth: int = 16) -> list[str]:
    names: list[str] = []
    j: int | None = i
    while j is not None and len(names) < depth:
        names.append(procs[j].comm)
        j = up[j]
    return names


def kind(names: list[str]) -> str:
    """What a process was, from its command and its ancestors' (names[0] is its own)."""
    own = names[0]
    if "gunicorn" in names:
        return "NetBox (gunicorn)"
    if own == "ansible-playboo":
        return "Ansible: ansible-playbook" if names[1:2] != ["ansible-playboo"] else "Ansible: its forks"
    if "ansible-playboo" in names:
        return "Ansible: its forks"            # ssh clients, sftp, control masters
    if "sshd" in names:
        # pipelined module runs are /bin/sh -c '/usr/bin/python3 ...' in a node's session
        if own.startswith("python3") and names[1:3] == ["sh", "sshd"]:
            return "Ansible: module runs on the nodes"
        return "node sessions (burn-in, commands)"
    if own == "prefect" or "prefect" in names[1:2]:
        return "Prefect servers"
    if own == "postgres":
        return "PostgreSQL"
    if own in ("redis-server", "bio_aof_fsync", "bio_close_file", "bio_lazy_free"):
        return "Redis"
    if own == "jemalloc_bg_thd":
        # a record names the process by its last thread: jemalloc's background thread is
        # Redis's, and also that of a Python process with pyarrow loaded (pandas)
        return "Redis, or Python with pyarrow"
    if own.startswith("rf_service"):
        return "DMTF Redfish validator"
    if own.startswith("stress-ng"):
        return "stress-ng (load scenarios)"
    if own in ("python", "pytest") or own.startswith("python3."):
        return "test workers and bringup processes"
    return "other"


def report(procs: list[Proc], wall_s: float | None, cores: int) -> str:
    up = parents(procs)
    cpu: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    for i, p in enumerate(procs):
        k = kind(chain(procs, up, i))
        cpu[k] += p.cpu
        count[k] += 1
    total = sum(cpu.values())
    lines = [f"{len(procs):,} processes, {total:,.0f} CPU-s"
             + (f" in {wall_s:,.0f} s wall: {total / (wall_s * cores):.0%} of {cores} cores busy" if wall_s else ""),
             "", f"{'what':40s} {'CPU-s':>9s} {'share':>6s} {'processes':>10s}"]
    for k, v in cpu.most_common():
        lines.append(f"{k:40s} {v:9,.0f} {v / total:6.1%} {count[k]:10,}")
    return "\n".join(lines)


def account(command: list[str]) -> tuple[Path, float, int]:
    accton = shutil.which("accton") or "/usr/sbin/accton"
    if os.geteuid() != 0 or not Path(accton).exists():
        raise SystemExit("process accounting needs root and accton: apt-get install -y acct, then run as root")
    fd, name = tempfile.mkstemp(prefix="pacct-")
    os.close(fd)
    subprocess.run([accton, name], check=True, capture_output=True)
    t0 = time.monotonic()
    try:
        rc = subprocess.call(command)
    finally:
        wall = time.monotonic() - t0
        subprocess.run([accton, "off"], check=False, capture_output=True)
    return Path(name), wall, rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, help="an acct v3 file to read instead of running a command")
    ap.add_argument("--wall", type=float, help="the wall time the file covers, for the busy share")
    ap.add_argument("command", nargs="*", help="the command to run (after --)")
    args = ap.parse_args(argv)
    cores = os.cpu_count() or 1
    if args.file:
        print(report(read(args.file), args.wall, cores))
        return 0
    if not args.command:
        ap.error("give a command after --, or --file")
    path, wall, rc = account(args.command)
    print(report(read(path), wall, cores))
    print(f"\n{' '.join(args.command)} exited {rc}; the record is {path}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
