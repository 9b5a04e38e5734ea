"""One pool's fabric test, run: topology and IB counters of every candidate, the first
round of pair tests, localisation rounds, counters again; the pure :mod:`.verdicts` turns
what came back into one result document per node.

A pair test is the multi-node ``all_reduce_perf`` over both nodes (mpirun from the first)
and ``ib_write_bw`` on every rail of the SKU's GPU<->NIC map, so a degraded rail fails the
pair even where NCCL's bandwidth, spread over eight rails, hides it; the localiser then
names the rails that failed with every partner. The tests of a round run at once, in
waves of node-disjoint pairs (a node runs one test at a time: one perftest port, one set
of GPUs). ``known_good`` nodes (active nodes of the pool) are partners only: they are
never judged here, and count as good from the start.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bringup.errors import BringupError
from bringup.fabric.counters import Reading
from bringup.fabric.localise import Localiser, pair_outcome
from bringup.fabric.models import FabricNode, Outcome, PairResult
from bringup.fabric.mpirun import NodeSsh
from bringup.fabric.pairing import Mode, plan_pairs
from bringup.fabric.policy import FabricThresholds, judge_rail
from bringup.fabric.runner import GroupNode, read_counters, run_nccl_group, run_rail
from bringup.fabric.topology import ExpectedTopology, NicReport, NodeTopology
from bringup.fabric.topomatrix import parse_topo_matrix
from bringup.remote.ssh import Ssh, Target


@dataclass(frozen=True)
class Member:
    """A node of the pool's test: how to reach it, its rack, and what its SKU expects."""

    name: str
    rack: str
    target: Target
    address: str
    gpus: int
    thresholds: FabricThresholds
    expected: ExpectedTopology | None
    #: False: an active node of the pool, used as a known-good partner only
    candidate: bool = True

    def group_node(self) -> GroupNode:
        return GroupNode(self.name, self.target, self.address, self.gpus)

    @property
    def rails(self) -> list[str]:
        return [p.nic for p in self.expected.pairs] if self.expected else []


@dataclass
class PoolRun:
    """What a pool's test saw: per candidate its topology and counters, and every pair test."""

    mode: str
    notes: list[str]
    localiser: Localiser
    pairs: list[dict[str, Any]] = field(default_factory=list)
    topology: dict[str, NodeTopology | str] = field(default_factory=dict)
    before: dict[str, Reading | str] = field(default_factory=dict)
    after: dict[str, Reading | str] = field(default_factory=dict)


TOPOLOGY_COMMAND = ["sh", "-c", ('nvidia-smi topo -m; echo "--- nic numa ---"; '
                                 'grep -H . "${BURNIN_SYSFS_ROOT:-}"/sys/class/infiniband/*/device/numa_node')]
_NUMA = re.compile(r"/sys/class/infiniband/([^/]+)/device/numa_node:(-?\d+)\s*$")


def parse_topology_output(text: str) -> NodeTopology:
    """``nvidia-smi topo -m`` and the NICs' sysfs NUMA nodes (what :data:`TOPOLOGY_COMMAND`
    prints) as one :class:`NodeTopology`; a NIC sysfs does not show keeps the matrix's entry."""
    matrix, _, sysfs = text.partition("--- nic numa ---")
    topo = parse_topo_matrix(matrix)
    numa = {m.group(1): int(m.group(2)) for line in sysfs.splitlines() if (m := _NUMA.search(line.strip()))}
    nics = [NicReport(name=n.name, numa_node=numa.get(n.name, n.numa_node)) for n in topo.nics]
    known = {n.name for n in nics}
    nics += [NicReport(name=k, numa_node=v) for k, v in sorted(numa.items()) if k not in known]
    return topo.model_copy(update={"nics": nics})


def first_round(candidates: list[Member], known_good: list[Member], mode: Mode,
                max_ring: int = 32) -> tuple[list[tuple[str, str]], list[str]]:
    """The first round: the candidates paired by ``mode``; a lone candidate with a known-good
    node of its rack (else any); none at all when it has no partner."""
    nodes = [FabricNode(name=m.name, rack=m.rack) for m in candidates]
    if len(candidates) == 1:
        if not known_good:
            return [], [f"{candidates[0].name} has no partner for the fabric test"]
        same = [g for g in known_good if g.rack == candidates[0].rack] or known_good
        return [(candidates[0].name, same[0].name)], [
            f"{candidates[0].name} is the pool's only candidate: tested with active node {same[0].name}"]
    plan = plan_pairs(nodes, mode=mode, max_ring=max_ring)
    return plan.pairs, plan.notes


def waves(batch: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Split a round into waves in which no node is in two tests (first fit, order kept)."""
    out: list[tuple[list[tuple[str, str]], set[str]]] = []
    for a, b in batch:
        for pairs, busy in out:
            if a not in busy and b not in busy:
                pairs.append((a, b))
                busy |= {a, b}
                break
        else:
            out.append(([(a, b)], {a, b}))
    return [pairs for pairs, _ in out]


@dataclass
class PoolTest:
    """The I/O of one pool's test through the SSH seam (:class:`~bringup.remote.ssh.Ssh`);
    knobs as in ``fabric.yaml``."""

    fs: Ssh
    node_ssh: NodeSsh
    members: list[Member]
    mode: Mode = "rack"
    end: str = "8G"
    nccl_timeout: float = 1800.0
    rail_timeout: float = 120.0
    allow_run_as_root: bool = False
    max_ring: int = 32
    by_name: dict[str, Member] = field(init=False)

    def __post_init__(self) -> None:
        self.by_name = {m.name: m for m in self.members}

    def run(self) -> PoolRun:
        candidates = [m for m in self.members if m.candidate]
        good = [m for m in self.members if not m.candidate]
        first, notes = first_round(candidates, good, self.mode, self.max_ring)
        nodes = [FabricNode(name=m.name, rack=m.rack) for m in self.members]
        # active nodes passed their own fabric test: good partners from the start
        loc = Localiser(nodes, first, known_good={m.name for m in good})
        out = PoolRun(mode=self.mode, notes=notes, localiser=loc)
        for m in candidates:
            out.topology[m.name] = self._safe(lambda m=m: parse_topology_output(
                self.fs.run(m.target, TOPOLOGY_COMMAND, timeout=60).stdout))
            out.before[m.name] = self._safe(lambda m=m: read_counters(self.fs, m.target))
        for _ in range(50):
            batch = loc.next_tests()
            if not batch:
                break
            results: list[PairResult] = []
            for wave in waves(batch):
                with ThreadPoolExecutor(max_workers=max(1, len(wave))) as pool:
                    for res, row in pool.map(lambda p: self.pair(*p), wave):
                        results.append(res)
                        out.pairs.append({**row, "round": loc.rounds})
            loc.record(results)
        for m in candidates:
            out.after[m.name] = self._safe(lambda m=m: read_counters(self.fs, m.target))
        return out

    @staticmethod
    def _safe(read):
        """A node's own reading; a node that cannot be read is its own problem (a message),
        not the pool's: the others are still judged."""
        try:
            return read()
        except BringupError as exc:
            return f"{type(exc).__name__}: {exc}"

    def pair(self, a: str, b: str) -> tuple[PairResult, dict[str, Any]]:
        """One pair test: NCCL over both, then every rail (``a`` serves, ``b`` is the client)."""
        ma, mb = self.by_name[a], self.by_name[b]
        th = ma.thresholds
        row: dict[str, Any] = {"a": a, "b": b}
        try:
            nccl = run_nccl_group(self.fs, [ma.group_node(), mb.group_node()], self.node_ssh,
                                  min_busbw_gbps=th.min_busbw_gbps, timeout=self.nccl_timeout, end=self.end,
                                  allow_run_as_root=self.allow_run_as_root)
            nccl_outcome, busbw, problems = nccl.outcome, nccl.busbw_gbps, list(nccl.problems)
        except BringupError as exc:  # an SSH failure of one of the two: not a fabric result
            nccl_outcome, busbw, problems = "unknown", None, [f"NCCL test not run: {exc}"]
        rails: dict[str, Outcome] = {}
        rail_rows: dict[str, Any] = {}
        for rail in ma.rails:
            try:
                rr = run_rail(self.fs, ma.group_node(), mb.group_node(), rail, timeout=self.rail_timeout)
                j = judge_rail(rail, rr.result, th)
                rails[rail], rail_rows[rail] = j.outcome, j.avg_gbps
                if j.outcome != "pass":
                    problems.append(j.message + (f" ({rr.problem})" if rr.problem else ""))
            except BringupError as exc:
                rails[rail], rail_rows[rail] = "unknown", None
                problems.append(f"{rail}: ib_write_bw not run: {exc}")
        outcomes = {nccl_outcome, pair_outcome(rails) if ma.rails else "pass"}
        outcome: Outcome = "fail" if "fail" in outcomes else "unknown" if "unknown" in outcomes else "pass"
        detail = "; ".join(problems)
        row.update(outcome=outcome, nccl=nccl_outcome, busbw_gbps=busbw, rails=rails, rail_gbps=rail_rows,
                   detail=detail)
        return PairResult(a=a, b=b, outcome=outcome, rails=rails, detail=detail), row
