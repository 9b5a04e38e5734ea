"""Benchmark: the configure step's Ansible cost, two ansible-playbook runs vs one.

    .venv/bin/python bench/configure_step.py [--nodes 8] [--drift 1] [--rounds 3]

Starts ``--nodes`` healthy simulated nodes and ``--drift`` nodes whose loaded driver differs
from the manifest (real sshd on 127.97.240.x, installed as the integration tests install
them), then runs the configure step on all of them, alternating per round:

* ``two-runs``: the step as it was before issue #23, pin.yml then configure.yml on the nodes
  that passed, in two ansible-playbook runs;
* ``one-run``: :func:`bringup.provision.ansible_steps.configure`, playbooks/provision.yml.

Per run it prints the wall time, the controller's CPU seconds (this process and every child
it reaped: ansible-playbook, its forks, the ssh clients, and the ssh ControlMasters, which
detach from their parent and come back to this process as the subreaper) and the nodes' CPU
seconds (each node sshd's own and its reaped sessions', read from ``/proc``). CPU time barely
moves when the machine is busy, wall time does: on a shared machine compare the CPU figures.
It also checks that both ways give every node the same outcome (ok, reason, facts).
One warm-up round runs first (the first configure writes the files; later ones find them).
"""

from __future__ import annotations

import argparse
import ctypes
import getpass
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bringup.provision import ansible_steps
from bringup.provision.image import ImageManifest, load_manifest
from bringup.remote.access import SshAccess
from bringup.remote.ansible import run_playbook
from bringup.sku import load_skus, nic_counts
from lab.fleet import loads_fleet
from lab.nodes.install import preinstall
from lab.nodes.sshd import client_key, descendants, known_hosts_path, sshd_pid, stop_sshd

#: loopback addresses no test uses (tests/integration/*/conftest.py take 81-95)
NET = "127.97.240"
PR_SET_CHILD_SUBREAPER = 36


def two_runs(hosts: dict[str, dict[str, Any]], manifest: ImageManifest, access: SshAccess) -> dict:
    """The configure step before issue #23 (ansible_steps.configure at e37e4e6)."""
    steps = ansible_steps.pin_versions(hosts, manifest, access)
    good = {n: h for n, h in hosts.items() if steps[n].ok}
    if good:
        for name, step in ansible_steps._steps(run_playbook("configure.yml", good, {}, access)).items():
            step.facts = {**steps[name].facts, **step.facts}
            steps[name] = step
    return steps


def one_run(hosts: dict[str, dict[str, Any]], manifest: ImageManifest, access: SshAccess) -> dict:
    return ansible_steps.configure(hosts, manifest, access)


def _controller_cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _reap(timeout: float = 10.0) -> None:
    """Wait for the detached ssh ControlMasters (told to exit at the end of each run)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            time.sleep(0.02)


def _node_cpu(pids: list[int]) -> float:
    """CPU of the nodes' sshd and of their finished sessions (reaped into cutime/cstime)."""
    deadline = time.monotonic() + 10
    while any(descendants(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)  # sessions still closing: their time is not in the parent yet
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(f) for f in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


@contextmanager
def running_nodes(tmp: Path, fleet, manifest: ImageManifest) -> Iterator[tuple[SshAccess, dict[str, dict[str, Any]], list[int]]]:
    """The fleet's nodes installed and their sshd running under ``tmp``/home, then this
    process made the subreaper (after the nodes started: their sshd daemons must not become
    ours; the ssh ControlMasters detach from ansible's ssh clients and come back to us to be
    reaped). Yields the access, the hosts and the nodes' sshd pids; stops the nodes and
    removes ``tmp`` at the end."""
    home = tmp / "home"
    try:
        client_key(home)
        for n in fleet.nodes:
            preinstall(n, home, manifest)
        access = SshAccess(getpass.getuser(), home / "secrets" / "id_ed25519", known_hosts_path(home))
        hosts = {n.name: {"address": n.address, "port": n.ssh_port} for n in fleet.nodes}
        pids = [sshd_pid(home, n.name) for n in fleet.nodes]
        if not all(pids):
            raise SystemExit(f"not every node's sshd runs: {pids}")
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        yield access, hosts, pids
    finally:
        for n in fleet.nodes:
            stop_sshd(home, n.name)
        shutil.rmtree(tmp, ignore_errors=True)


def _outcome(steps: dict) -> dict:
    return {n: (s.ok, s.unreachable, s.reason, s.facts) for n, s in sorted(steps.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=8, help="healthy nodes")
    ap.add_argument("--drift", type=int, default=1, help="nodes whose driver differs from the manifest")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-configure-"))
    specs = [(f"ok{i}", "[]") for i in range(1, args.nodes + 1)]
    specs += [(f"drift{i}", '[{kind: driver_drift, value: "570.86.15"}]') for i in range(1, args.drift + 1)]
    lines = ["site: t", "pools: {p: {}}", "nodes:"]
    lines += [f"  - {{name: {name}, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.96.240.{i}, "
              f"address: {NET}.{i}, faults: {faults}}}" for i, (name, faults) in enumerate(specs, 1)]
    fleet = loads_fleet("\n".join(lines) + "\n", nic_counts(load_skus()))
    manifest = load_manifest("ubuntu-2404-cuda128")
    with running_nodes(tmp, fleet, manifest) as (access, hosts, pids):
        ways = {"two-runs": two_runs, "one-run": one_run}
        figures: dict[str, list[tuple[float, float, float]]] = {w: [] for w in ways}
        outcomes = {}
        for rnd in range(args.rounds + 1):
            for way, fn in ways.items():
                node0, cpu0, t0 = _node_cpu(pids), _controller_cpu(), time.monotonic()
                outcomes[way] = _outcome(fn(hosts, manifest, access))
                wall = time.monotonic() - t0
                _reap()
                cpu, node = _controller_cpu() - cpu0, _node_cpu(pids) - node0
                if rnd:  # round 0 warms up
                    figures[way].append((wall, cpu, node))
                    print(f"configure_step: round {rnd} {way:8} wall_s {wall:6.2f} controller_cpu_s {cpu:6.2f} "
                          f"node_cpu_s {node:6.2f}", flush=True)
        same = outcomes["two-runs"] == outcomes["one-run"]
        n = len(hosts)
        for way, rows in figures.items():
            wall, cpu, node = (statistics.median(r[i] for r in rows) for i in range(3))
            print(f"configure_step: median {way:8} nodes {n} wall_s {wall:6.2f} controller_cpu_s {cpu:6.2f} "
                  f"node_cpu_s {node:6.2f} cpu_s_per_node {(cpu + node) / n:5.2f}")
        print(f"configure_step: same outcome for every node: {'yes' if same else 'NO'}")
        if not same:
            for node in hosts:
                if outcomes["two-runs"][node] != outcomes["one-run"][node]:
                    print(f"  {node}: two-runs {outcomes['two-runs'][node]}\n  {node}: one-run  {outcomes['one-run'][node]}")
            raise SystemExit(1)


if __name__ == "__main__":
    main()
