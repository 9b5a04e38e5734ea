"""One fabric test between nodes, run and read: the multi-node NCCL test of a group, the
per-rail ``ib_write_bw`` of a pair, and the IB port counters before and after.

Built on the SSH seam (:class:`~bringup.remote.ssh.Ssh`: commands run on the nodes from
the controller, SSH trouble raised by class, a command's failure a value) and the pure
parsers; each result is a value with an outcome, ``unknown`` whenever the output could
not be read or the run did not finish (never a pass).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from bringup.errors import ConfigError, HostKeyMismatch, ParseError
from bringup.fabric.counters import Reading
from bringup.fabric.models import Outcome
from bringup.fabric.mpirun import MpiHost, NodeSsh, ib_write_bw_argv, mpirun_argv, nccl_argv
from bringup.fabric.ncclworld import parse_world, world_problems
from bringup.fabric.perftest import PerftestResult, parse_perftest_bw
from bringup.remote.ssh import Completed, Ssh, Target
from bringup.retry import Backoff, Timeout, poll
from burnin.checks.tools import NCCL_ERROR_LIMITS
from burnin.parsers import UnparseableOutput
from burnin.parsers.nccl import assess, busbw_at_largest, parse_nccl_run, run_outcome

#: OpenMPI 4's messages for ranks that were never started (tests/integration/fabric shows them)
_LAUNCH_FAILED = ("ORTE was unable to reliably start", "ORTE does not know how to route",
                  "was unable to find the executable", "mpirun was unable to launch")
#: findings that say the run itself failed (burnin.parsers.nccl): a failed group whatever else it shows
_RUN_FAILED = ("nccl_failed", "nccl_launcher_failed")


@dataclass(frozen=True)
class GroupNode:
    """A node of a multi-node test: how the controller reaches it and how its partners do."""

    name: str
    target: Target
    address: str
    gpus: int


@dataclass
class NcclGroupResult:
    nodes: list[str]
    outcome: Outcome
    busbw_gbps: float | None
    problems: list[str]
    run: Completed
    findings: list[dict[str, object]] = field(default_factory=list)


def run_nccl_group(fs: Ssh, nodes: list[GroupNode], node_ssh: NodeSsh, *, min_busbw_gbps: float,
                   timeout: float = 1800.0, end: str = "8G", env: dict[str, str | None] | None = None,
                   allow_run_as_root: bool = False) -> NcclGroupResult:
    """``mpirun`` from the first node: one rank per GPU over ``nodes``, ``all_reduce_perf``
    up to ``end``; passes when it was one communicator over every node, correct, finished
    (its summary printed) and its bus bandwidth at the largest sizes reaches
    ``min_busbw_gbps``. The run is judged as the agent judges it
    (:func:`burnin.parsers.nccl.assess`): a rank's ``Test NCCL failure`` line, before or
    after any row, or the launcher's report of a rank's bad exit fails the group; a run cut
    before its summary is unknown, its reason naming the last row."""
    hosts = [MpiHost(n.name, n.address, n.gpus) for n in nodes]
    argv = mpirun_argv(hosts, nccl_argv(end=end), node_ssh, env=env, allow_run_as_root=allow_run_as_root)
    # the node stops its own mpirun at the deadline: OpenMPI 4.1's mpirun waits forever for
    # a daemon that never reports back (seen in the lab under load; reproduced with an rsh
    # agent that starts none), and closing our session would leave it running there
    bounded = ["timeout", "--kill-after=15", str(max(1, int(timeout))), *argv]
    names = [n.name for n in nodes]
    retried: list[str] = []
    for attempt in (1, 2):
        run = fs.run(nodes[0].target, bounded, timeout=timeout + 45)
        _raise_for_partner_keys(nodes, run.stderr)
        stopped = run.timed_out or run.rc in (124, 137)
        # not one line from a rank: the launch hung, which says nothing about the fabric;
        # one more try (a run that printed and then stalled is judged as it is)
        if stopped and attempt == 1 and not run.stdout.strip():
            retried.append(f"mpirun printed nothing within {timeout:.0f}s (its launch hung): stopped, run again")
            continue
        break
    if stopped:
        return NcclGroupResult(names, "unknown", None,
                               [*retried, f"mpirun did not finish within {timeout:.0f}s"], run)
    res = _judged(names, hosts, run, min_busbw_gbps)
    if retried and res.outcome != "pass":  # a pass is a pass; otherwise the hung try is part of the story
        res.problems[:0] = retried
    return res


def _judged(names: list[str], hosts: list[MpiHost], run: Completed, min_busbw_gbps: float) -> NcclGroupResult:
    """The group's result from a run of mpirun that ended (see :func:`run_nccl_group`)."""
    problems = world_problems(parse_world(run.stdout), nodes=len(names), ranks=sum(h.slots for h in hosts))
    tail = run.stderr.strip().splitlines()[-1:] or ["no error output"]
    # a launch that never started the ranks says nothing about the fabric
    launch = any(m in run.stderr for m in _LAUNCH_FAILED)
    try:
        # the agent's judgement of a run: failure lines from any rank (stdout) and the
        # launcher's report of a rank's bad exit (stderr) are read, rows or not
        parsed = parse_nccl_run(run.stdout, run.stderr)
    except UnparseableOutput as exc:
        # a test that started and died without a word (NCCL aborting on a broken link) fails
        return NcclGroupResult(names, "unknown" if run.rc == 0 or launch else "fail", None,
                               [*problems, f"no result table ({exc}); mpirun exit {run.rc}: {tail[0]}"], run)
    findings = assess(parsed, NCCL_ERROR_LIMITS)
    verdict, messages = run_outcome(findings)
    died = any(f["code"] in _RUN_FAILED for f in findings)
    busbw = busbw_at_largest(parsed) if parsed["complete"] else None  # a cut sweep's largest rows are not its end
    low = busbw is not None and busbw < min_busbw_gbps
    outcome: Outcome
    if launch and not parsed["rows"] and not parsed["failures"]:
        return NcclGroupResult(names, "unknown", None, [*problems, *messages, f"mpirun exit {run.rc}: {tail[0]}"],
                               run, findings)
    if died:
        outcome = "fail"  # the run itself failed (a rank's failure line, a rank that exited badly)
    elif problems:
        outcome = "unknown"  # not one run over these nodes: says nothing about them
    elif verdict == "fail" or low or run.rc != 0:
        outcome = "fail"
    elif verdict == "unknown":
        outcome = "unknown"
    else:
        outcome = "pass"
    problems += messages
    if run.rc != 0 and not died:
        problems.append(f"mpirun exit {run.rc}")
    if low:
        problems.append(f"busbw {busbw:.1f} GB/s at the largest sizes is below {min_busbw_gbps:g}")
    return NcclGroupResult(names, outcome, busbw, problems, run, findings)


# what OpenSSH prints, under mpirun, when a partner's key is not pinned or has changed
_UNPINNED = re.compile(r"No \S+ host key is known for \[?([^\]\s:]+)\]?(?::\d+)?")
_CHANGED = re.compile(r"Host key for \[?([^\]\s:]+)\]?(?::\d+)? has changed")


def _raise_for_partner_keys(nodes: list[GroupNode], stderr: str) -> None:
    """A partner OpenMPI's ssh would not trust says nothing about the fabric: a key never
    pinned on the launcher is our setup (the node is held), a changed one is the partner's
    (never connected to)."""
    by_address = {n.address: n.name for n in nodes}
    if m := _UNPINNED.search(stderr):
        who = by_address.get(m.group(1), m.group(1))
        raise ConfigError(f"node {nodes[0].name} has no pinned host key for its fabric partner {who} "
                          f"({m.group(1)}); mpirun refused to connect",
                          hint="write the partners' host keys into the known_hosts the nodes use for mpirun")
    if m := _CHANGED.search(stderr):
        who = by_address.get(m.group(1), m.group(1))
        raise HostKeyMismatch(f"fabric partner {who} ({m.group(1)}) presented a host key other than the pinned "
                              f"one to {nodes[0].name}; refusing to run the test with it",
                              hint="if the node was legitimately re-keyed, update the pinned key; else inspect it")


@dataclass
class RailResult:
    rail: str
    client: Completed
    server: Completed | None
    result: PerftestResult | None
    problem: str = ""


def run_rail(fs: Ssh, server: GroupNode, client: GroupNode, device: str, *, timeout: float = 120.0,
             gpu: int | None = None, connect_wait: float = 30.0, settle: float = 0.5) -> RailResult:
    """``ib_write_bw`` on ``device`` of both nodes: the server first, then the client. The
    client's "Couldn't connect" (the server not listening yet: its ssh session and start
    take seconds on a loaded node) is retried with a growing pause while the server still
    runs, for up to ``connect_wait`` seconds in all, as perftest scripts wait for their
    server; the result read is the client's report."""
    srv_cmd = ib_write_bw_argv(device, gpu=gpu)
    cli_cmd = ib_write_bw_argv(device, server=server.address, gpu=gpu)
    proc = fs.start(server.target, srv_cmd)

    def client_run() -> tuple[Completed, bool]:
        """The client's output, and whether to try again (refused while the server runs)."""
        cli = fs.run(client.target, cli_cmd, timeout=timeout)
        refused = cli.rc != 0 and "Couldn't connect" in cli.stdout + cli.stderr
        return cli, refused and proc.poll() is None

    try:
        time.sleep(settle)  # the server's own start; then the pauses grow from twice that
        try:
            # time.sleep / time.monotonic looked up now, not at import: tests move them
            cli, _ = poll(client_run, timeout=max(0.0, connect_wait - settle),
                          what=f"ib_write_bw server on {server.name}",
                          done=lambda answer: answer is not None and not answer[1],
                          backoff=Backoff(first=2 * settle, factor=2.0, cap=4.0), sleep=time.sleep,
                          clock=time.monotonic)
        except Timeout as exc:
            cli = exc.last[0]  # type: ignore[index]  (the last client run, still refused)
        srv = proc.wait(timeout if cli.rc == 0 else 2.0)
    finally:
        proc.kill()
    try:
        return RailResult(device, cli, srv, parse_perftest_bw(cli.stdout, source=f"ib_write_bw {device}"))
    except ParseError as exc:
        return RailResult(device, cli, srv, None, f"{exc} (exit {cli.rc}: {cli.stdout.strip()[-200:]})")


_COUNTER = re.compile(r"/sys/class/infiniband/([^/]+)/ports/(\d+)/counters/([A-Za-z0-9_]+):(\d+)$")
# BURNIN_SYSFS_ROOT is empty on a real node; the lab's nodes keep their sysfs under it
COUNTERS_COMMAND = ["sh", "-c", 'grep -H . "${BURNIN_SYSFS_ROOT:-}"/sys/class/infiniband/*/ports/*/counters/*']


def parse_counter_dump(text: str) -> Reading:
    """``grep -H .`` lines of the counter files into ``{(hca, port): {counter: value}}``;
    lines of other shapes (a counter that is not a number) are left out, so that counter is
    missing and its growth unknown."""
    out: Reading = {}
    for line in text.splitlines():
        m = _COUNTER.search(line.strip())
        if m:
            out.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = int(m.group(4))
    return out


def read_counters(fs: Ssh, target: Target, timeout: float = 30.0) -> Reading:
    return parse_counter_dump(fs.run(target, COUNTERS_COMMAND, timeout=timeout).stdout)
