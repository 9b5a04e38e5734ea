"""Benchmark: what a tool run on a simulated node costs, with the node's own PATH and with
the controller's PATH first (the lab before issue #23's node PATH).

    .venv/bin/python bench/node_tools.py [--rounds 20]

Writes one healthy node's simulated world (lab.gpu.profile.write_node_profile: the tool
stand-ins, the NVML stand-in, sysfs) under a temporary folder, then runs the tools the
burn-in agent and the gate run there (``uname -r``, ``dpkg-query -W``, ``ibstat``,
``nvidia-smi -L``) ``--rounds`` times each, alternately with the two PATHs:

* ``node``: :func:`lab.gpu.profile.node_env`: the stand-ins, then the node's system folders,
  then this machine's PATH;
* ``controller-first``: the stand-ins, then this machine's PATH as it is (on a machine
  with pyenv, ``python3`` there is a shim: a shell script that forks its way to an
  interpreter).

Prints the CPU seconds per tool run (this process's reaped children: user + system) and
the ``python3`` each PATH finds, and checks both give the same output. CPU time barely
moves when the machine is busy; wall time does. Last line:
``node_tools: cpu_s_per_run node N controller_first C ratio R``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bringup.sku import load_skus, nic_counts
from lab.fleet import loads_fleet
from lab.gpu.profile import node_env, write_node_profile

FLEET = """
site: bench
pools: {p: {}}
nodes:
  - {name: tools, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.97.242.1, address: 127.97.242.2}
"""
INSTALLED = {"driver": "570.133.20", "cuda": "12.8", "nccl": "2.26.2-1+cuda12.8", "kernel": "6.8.0-60-generic"}
TOOLS = (["uname", "-r"], ["dpkg-query", "-W", "-f=${Package} ${Version}\\n", "nvidia-driver-570"], ["ibstat"],
         ["nvidia-smi", "-L"])


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    before = _children_cpu()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    return _children_cpu() - before, f"{out.returncode} {out.stdout}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    skus = load_skus()
    node = loads_fleet(FLEET, nic_counts(skus)).node("tools")
    root = Path(tempfile.mkdtemp(prefix="bench-node-tools-"))
    try:
        env_node = {**os.environ, **write_node_profile(node, skus[node.sku], INSTALLED, root / "root",
                                                       nvml_build_dir=root / "build")}
        env_first = {**env_node, "PATH": f"{env_node['PATH_PREFIX']}{os.pathsep}{os.environ.get('PATH', '')}"}
        assert env_node["PATH"] == node_env(root / "root", root / "build")["PATH"]
        ways = {"node": env_node, "controller-first": env_first}
        for name, env in ways.items():
            print(f"{name:17s} python3 = {shutil.which('python3', path=env['PATH'])}")
        cpu: dict[str, list[float]] = {w: [] for w in ways}
        outputs: dict[str, set[str]] = {w: set() for w in ways}
        for _ in range(args.rounds):
            for way, env in ways.items():       # alternately: a busy spell hits both
                for argv in TOOLS:
                    c, out = run(argv, env)
                    cpu[way].append(c)
                    outputs[way].add(f"{argv[0]}: {out}")
        if outputs["node"] != outputs["controller-first"]:
            raise SystemExit("node_tools: the two PATHs gave different outputs:\n"
                             + "\n".join(sorted(outputs["node"] ^ outputs["controller-first"])))
        med = {w: statistics.median(v) for w, v in cpu.items()}
        mean = {w: statistics.fmean(v) for w, v in cpu.items()}
        for w in ways:
            print(f"{w:17s} cpu_s per tool run: median {med[w]:.3f} mean {mean[w]:.3f} ({len(cpu[w])} runs)")
        print(f"node_tools: cpu_s_per_run node {mean['node']:.3f} controller_first {mean['controller-first']:.3f} "
              f"ratio {mean['controller-first'] / max(mean['node'], 1e-9):.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
