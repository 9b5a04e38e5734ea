"""Was a multi-node nccl-tests run one communicator across the nodes it was given?

A multi-node ``all_reduce_perf`` prints one ``#  Rank  N Group  G Pid P on HOST device D
[BUS] NAME`` line per rank, from rank 0. Two real ways it goes wrong and still prints a
clean table (tests/fixtures/nccl-multinode/SOURCES.md):

- nccl-tests built without MPI, launched by mpirun: every process is ``Rank 0`` of its own
  communicator (nccl-tests issue #254), so the table says nothing about the fabric;
- each node runs its own test: the header is printed once per node (issue #213).

The table itself is read by the agent's parser (``burnin.parsers.nccl``, which also strips
``[1,0]<stdout>:`` prefixes); this module only reads the rank lines and says whether the
run covered the expected ranks and hosts. Problems are values, never exceptions.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from burnin.parsers.nccl import strip_launcher

# "Group" is absent in older nccl-tests ("#   Rank  0 Pid   1320 on HOST device  0 [0x00] NAME")
_RANK = re.compile(r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
                   r"\[([^\]]+)\]\s+(\S.*)$")
_HEADER = re.compile(r"^#?\s*nThread\s+\d+\s+nGpus\s+(\d+)\s")


class RankLine(BaseModel):
    rank: int
    pid: int
    host: str
    device: int
    bus_id: str
    gpu: str


class World(BaseModel):
    ranks: list[RankLine]
    headers: int  # "# nThread ..." lines: one per independent test run
    gpus_per_process: int | None

    @property
    def hosts(self) -> list[str]:
        """Hosts in rank order, each once."""
        return list(dict.fromkeys(r.host for r in self.ranks))


def parse_world(text: str) -> World:
    ranks: list[RankLine] = []
    headers = 0
    ngpus = None
    for raw in text.replace("\r", "\n").splitlines():
        line = strip_launcher(raw)
        if not line:
            continue
        if m := _HEADER.match(line):
            headers += 1
            ngpus = int(m.group(1))
            continue
        if m := _RANK.match(line):
            ranks.append(RankLine(rank=int(m.group(1)), pid=int(m.group(3)), host=m.group(4),
                                  device=int(m.group(5)), bus_id=m.group(6), gpu=m.group(7).strip()))
    return World(ranks=ranks, headers=headers, gpus_per_process=ngpus)


def world_problems(world: World, *, nodes: int, ranks: int) -> list[str]:
    """What says this was not one run of ``ranks`` ranks over ``nodes`` hosts (empty when
    it was). Each problem is a sentence naming what was seen and what was expected."""
    out: list[str] = []
    if world.headers != 1:
        out.append(f"the test header was printed {world.headers} times, expected once: "
                   + ("no test started" if world.headers == 0 else "each node ran its own test (nccl-tests "
                      "built without MPI, or launched once per node)"))
    seen = [r.rank for r in world.ranks]
    if len(set(seen)) != len(seen):
        dup = sorted({r for r in seen if seen.count(r) > 1})
        out.append(f"rank(s) {', '.join(map(str, dup))} printed more than once: the processes did not form one "
                   "communicator (an nccl-tests build without MPI=1 under mpirun)")
    # one line per NCCL rank (per GPU, also with -g 8 in one process): ranks 0..n-1
    if sorted(set(seen)) != list(range(ranks)):
        out.append(f"{len(set(seen))} GPU rank(s) took part, expected ranks 0..{ranks - 1}")
    if len(world.hosts) != nodes:
        out.append(f"ranks ran on {len(world.hosts)} host(s) ({', '.join(world.hosts) or 'none'}), expected {nodes}")
    return out
