"""Benchmark: what each playbook a node's commission runs costs, this tree's playbooks
against another revision's, side by side.

    .venv/bin/python bench/playbook_cost.py --before HEAD~1 [--nodes 1] [--rounds 3]

Starts ``--nodes`` simulated nodes (real sshd on 127.97.241.x, installed as the integration
tests install them) and runs, per round and alternately for the two sets of playbooks
(``--before``: the revision's ``playbooks/`` from git; ``after``: this tree's): the
configure step's provision.yml (pin.yml then configure.yml), burnin.yml and sharing.yml,
the last two with a stand-in agent that writes its document at once (the agent's own work
is the same whichever playbook sends it, and would hide the difference). Both sets get
every extra var either of them reads (the agent as a .tar.gz and as an installer script).

Per run it prints the controller's CPU seconds (this process and every child it reaped:
ansible-playbook, its forks, the ssh clients and ControlMasters) and the nodes' (each
node sshd's own and its reaped sessions', from ``/proc``), and checks both sets give every
node the same outcome. CPU time barely moves when the machine is busy: compare CPU. The
last lines read ``playbook_cost: PLAYBOOK before|after controller_cpu_s C node_cpu_s N``
(medians; round 0 warms up and is not counted).
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from configure_step import _controller_cpu, _node_cpu, _reap, running_nodes

from bringup.provision.ansible_steps import agent_installer, pack_agent
from bringup.provision.image import load_manifest, pin_vars
from bringup.remote.ansible import run_playbook
from bringup.sku import load_skus, nic_counts
from lab.fleet import loads_fleet

REPO = Path(__file__).resolve().parent.parent
#: loopback addresses no test and no other bench uses
NET = "127.97.241"
#: the stand-in agent: both commands the playbooks run, each writing its document at once
AGENT = '''
import argparse, json
ap = argparse.ArgumentParser()
sub = ap.add_subparsers(dest="cmd")
run = sub.add_parser("run"); run.add_argument("--plan"); run.add_argument("--out")
sh = sub.add_parser("sharing"); sh.add_argument("--mig"); sh.add_argument("--mig-off", action="store_true")
sh.add_argument("--out")
a = ap.parse_args()
json.dump({"schema_version": 1, "stand_in": a.cmd}, open(a.out, "w"))
'''


def playbooks_of(rev: str, dest: Path) -> Path:
    """The revision's playbooks/ folder, unpacked under ``dest``."""
    data = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, "playbooks"],
                          capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest / "playbooks"


def stand_in_agent(tmp: Path) -> dict[str, str]:
    """Extra vars carrying the stand-in agent both ways: the .tar.gz the unarchive module
    took and the installer script."""
    pkg = tmp / "agent" / "burnin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(AGENT)
    out = tmp / "packed"
    out.mkdir()
    archive = pack_agent(pkg, out, {"checks": []})
    installer = str(agent_installer(archive))
    return {"burnin_archive": str(archive), "sharing_archive": str(archive),
            "burnin_installer": installer, "sharing_installer": installer}


def plays(manifest, agent: dict[str, str], fetch: Path) -> dict[str, dict[str, Any]]:
    """Playbook -> its extra vars."""
    return {
        "provision.yml": pin_vars(manifest),
        "burnin.yml": {**agent, "burnin_timeout": 60, "burnin_fetch_dir": str(fetch)},
        "sharing.yml": {**agent, "sharing_args": "--mig-off", "device_plugin_config": "version: v1",
                        "sharing_fetch_dir": str(fetch), "sharing_timeout": 60},
    }


def _outcome(res) -> dict:
    return {n: (h.ok, h.unreachable, [f.task for f in h.failures]) for n, h in sorted(res.hosts.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="git revision whose playbooks/ to compare with this tree's")
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-playbooks-"))
    lines = ["site: t", "pools: {p: {}}", "nodes:"]
    lines += [f"  - {{name: n{i}, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.96.241.{i}, "
              f"address: {NET}.{i}}}" for i in range(1, args.nodes + 1)]
    fleet = loads_fleet("\n".join(lines) + "\n", nic_counts(load_skus()))
    manifest = load_manifest("ubuntu-2404-cuda128")
    dirs = {"before": playbooks_of(args.before, tmp / "before"), "after": REPO / "playbooks"}
    fetch = tmp / "fetch"
    fetch.mkdir()
    with running_nodes(tmp, fleet, manifest) as (access, hosts, pids):
        todo = plays(manifest, stand_in_agent(tmp), fetch)
        figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for rnd in range(args.rounds + 1):
            for playbook, extra in todo.items():
                outcomes = {}
                for way, folder in dirs.items():
                    node0, cpu0, t0 = _node_cpu(pids), _controller_cpu(), time.monotonic()
                    outcomes[way] = _outcome(run_playbook(playbook, hosts, extra, access, playbooks_dir=folder))
                    wall = time.monotonic() - t0
                    _reap()
                    cpu, node = _controller_cpu() - cpu0, _node_cpu(pids) - node0
                    if rnd:
                        figures.setdefault((playbook, way), []).append((cpu, node))
                        print(f"playbook_cost: round {rnd} {playbook:14} {way:6} wall_s {wall:6.2f} "
                              f"controller_cpu_s {cpu:6.2f} node_cpu_s {node:6.2f}", flush=True)
                if outcomes["before"] != outcomes["after"]:
                    raise SystemExit(f"{playbook}: the two sets differ: {outcomes}")
        for (playbook, way), runs in figures.items():
            print(f"playbook_cost: {playbook} {way} controller_cpu_s {statistics.median(c for c, _ in runs):.2f} "
                  f"node_cpu_s {statistics.median(n for _, n in runs):.2f}")


if __name__ == "__main__":
    main()
