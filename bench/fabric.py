"""Benchmark (not a test): pairing and localisation over a simulated fleet.

Racks of 16; planted bad nodes fail with everyone, bad links fail only between their two
nodes. Each pair test takes ``--test-s`` simulated seconds; at most ``--per-rack`` tests
touch a rack at once and ``--global-limit`` run in all; a node is in one test at a time.
Prints found vs planted, the wrongly blamed (must be 0), the tests run against the target
n/2 + 4 x faults, and the simulated wall time against the bound the limits allow (each
round waits for the previous one's results, so the bound is the sum of per-round bounds).

    python bench/fabric.py --nodes 1000 --bad-nodes 3 --bad-links 2 --seed 1
"""

from __future__ import annotations

import argparse
import heapq
import math
import random

from bringup.fabric.localise import Localiser
from bringup.fabric.models import FabricNode, PairResult
from bringup.fabric.pairing import plan_pairs


def schedule(batch, rack, test_s, per_rack, global_limit):
    """Greedy list scheduling of one round; returns its makespan in seconds."""
    pending = list(batch)
    running: list[tuple[float, int, tuple[str, str]]] = []
    busy_nodes: set[str] = set()
    rack_load: dict[str, int] = {}
    now, seq = 0.0, 0
    while pending or running:
        started = []
        for a, b in pending:
            racks = {rack[a], rack[b]}
            if (len(running) < global_limit and a not in busy_nodes and b not in busy_nodes
                    and all(rack_load.get(r, 0) < per_rack for r in racks)):
                seq += 1
                heapq.heappush(running, (now + test_s, seq, (a, b)))
                busy_nodes |= {a, b}
                for r in racks:
                    rack_load[r] = rack_load.get(r, 0) + 1
                started.append((a, b))
        for p in started:
            pending.remove(p)
        end, _, (a, b) = heapq.heappop(running)
        now = end
        busy_nodes -= {a, b}
        for r in {rack[a], rack[b]}:
            rack_load[r] -= 1
    return now


def round_bound(batch, rack, test_s, per_rack, global_limit):
    touching: dict[str, int] = {}
    per_node: dict[str, int] = {}
    for a, b in batch:
        for r in {rack[a], rack[b]}:
            touching[r] = touching.get(r, 0) + 1
        for n in (a, b):
            per_node[n] = per_node.get(n, 0) + 1
    waves = max(math.ceil(len(batch) / global_limit), max(math.ceil(v / per_rack) for v in touching.values()),
                max(per_node.values()))
    return waves * test_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--bad-nodes", type=int, default=3)
    ap.add_argument("--bad-links", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rack-size", type=int, default=16)
    ap.add_argument("--mode", choices=["rack", "cross_rack", "ring"], default="rack")
    ap.add_argument("--test-s", type=float, default=60.0, help="simulated seconds per pair test")
    ap.add_argument("--per-rack", type=int, default=8, help="tests touching one rack at once")
    ap.add_argument("--global-limit", type=int, default=256, help="tests at once in all")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    nodes = [FabricNode(name=f"gpu{i:04d}", rack=f"rack{i // args.rack_size:03d}") for i in range(args.nodes)]
    rack = {n.name: n.rack for n in nodes}
    names = [n.name for n in nodes]
    bad = set(rng.sample(names, args.bad_nodes))
    links: set[frozenset[str]] = set()
    pairing = plan_pairs(nodes, args.mode)
    # a bad link is planted on a path the first round tests: a cable between two nodes
    # that no pairing puts together is invisible to any pair test (the per-rail and
    # counter checks are what see those)
    first = [p for p in pairing.pairs if not (set(p) & bad)]
    while len(links) < args.bad_links:
        links.add(frozenset(rng.choice(first)))

    def runner(batch):
        return [PairResult(a=a, b=b, outcome="fail" if a in bad or b in bad or frozenset((a, b)) in links
                           else "pass") for a, b in batch]

    loc = Localiser(nodes, pairing.pairs)
    tests = 0
    wall = bound = 0.0
    while batch := loc.next_tests():
        tests += len(batch)
        wall += schedule(batch, rack, args.test_s, args.per_rack, args.global_limit)
        bound += round_bound(batch, rack, args.test_s, args.per_rack, args.global_limit)
        loc.record(runner(batch))
    findings = loc.findings()
    found_nodes = {f.nodes[0] for f in findings if f.kind == "node"}
    found_links = {frozenset(f.nodes) for f in findings if f.kind == "link"}
    unknown = [f for f in findings if f.kind == "unknown"]
    wrong = (found_nodes - bad) | {n for k in found_links - links for n in k}
    faults = args.bad_nodes + args.bad_links
    target = args.nodes / 2 + 4 * faults
    print(f"fleet: {args.nodes} nodes in racks of {args.rack_size}, pairing {args.mode}, seed {args.seed}")
    for note in pairing.notes:
        print(f"  pairing: {note}")
    print(f"bad nodes planted {sorted(bad)}; found {sorted(found_nodes)}")
    print(f"bad links planted {sorted(sorted(k) for k in links)}; found {sorted(sorted(k) for k in found_links)}")
    print(f"wrongly blamed: {len(wrong)} {sorted(wrong)}; unknown findings: {len(unknown)}")
    print(f"pair tests run: {tests} (target <= n/2 + 4 x faults = {target:g}) in {loc.rounds} rounds")
    print(f"simulated wall time: {wall:.0f} s; bound from the limits (per-rack {args.per_rack}, global "
          f"{args.global_limit}, {args.test_s:g} s a test): {bound:.0f} s")
    ok = found_nodes == bad and found_links == links and not wrong and not unknown and tests <= target
    print("RESULT:", "ok" if ok else "MISSED")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
