"""The node supervisor: ``python -m lab.nodes serve --fleet FILE --home LAB_HOME``.

It prepares the lab's client key, starts the sshd
of each node that has an OS installed, restarts one that died, and plays the
``ssh_drop`` fault: a few seconds after the burn-in agent starts on such a node, the
node's sshd and all its sessions are killed (like a link flap or a kernel panic), then
the node comes back a little later. On SIGTERM it stops every node's sshd.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path

from bringup.sku import load_skus, nic_counts
from lab.fleet import FaultKind, FleetProfile, NodeSpec, load_fleet

from .sshd import (
    NodeDir,
    _cmdline,
    client_key,
    descendants,
    kill_tree,
    sshd_pid,
    start_sshd,
    stop_sshd,
)

log = logging.getLogger("lab.nodes")

#: seconds a dropped node stays unreachable before its sshd comes back
DROP_DOWNTIME = 3.0
#: seconds after the agent starts before the drop, unless the fault's value says
DROP_AFTER = 2.0


def agent_pids(sshd: int) -> list[int]:
    """Burn-in agents (``python3 -m burnin run ...``) running in the node's sessions."""
    return [p for p in descendants(sshd) if "-m burnin run" in _cmdline(p)]


class NodeSupervisor:
    def __init__(self, fleet: FleetProfile, home: Path) -> None:
        self.fleet = fleet
        self.home = home
        self.stopping = threading.Event()
        self._agent_seen: dict[str, tuple[int, float]] = {}
        self._down_until: dict[str, float] = {}
        self._dropped: set[int] = set()

    def prepare(self) -> None:
        # the controller's known_hosts is bringup's: it pins the keys it put in the nodes' seeds
        client_key(self.home)

    def installed(self, node: NodeSpec) -> bool:
        return bool(NodeDir(self.home, node.name).read_state().get("installed"))

    def start_installed(self) -> float:
        """Start the sshd of every installed node; return the seconds it took."""
        t0 = time.monotonic()
        for node in self.fleet.nodes:
            if self.installed(node):
                start_sshd(self.home, node)
        return time.monotonic() - t0

    def tick(self) -> None:
        now = time.monotonic()
        for node in self.fleet.nodes:
            if not self.installed(node):
                continue
            pid = sshd_pid(self.home, node.name)
            if pid is None:
                if now >= self._down_until.get(node.name, 0.0):
                    log.info("starting sshd of %s", node.name)
                    start_sshd(self.home, node)
                continue
            for fault in node.faults_of(FaultKind.SSH_DROP):
                self._maybe_drop(node, pid, float(fault.value or DROP_AFTER), now)

    def _maybe_drop(self, node: NodeSpec, sshd: int, after: float, now: float) -> None:
        agents = [p for p in agent_pids(sshd) if p not in self._dropped]
        if not agents:
            self._agent_seen.pop(node.name, None)
            return
        agent, since = self._agent_seen.setdefault(node.name, (agents[0], now))
        if now - since < after:
            return
        log.warning("fault ssh_drop: killing the sshd of %s and its sessions (agent pid %d)", node.name, agent)
        self._dropped.update(agents)
        kill_tree(sshd, signal.SIGKILL)
        NodeDir(self.home, node.name).pidfile.unlink(missing_ok=True)
        self._agent_seen.pop(node.name, None)
        self._down_until[node.name] = now + DROP_DOWNTIME

    def run(self, poll: float = 0.2) -> None:
        self.prepare()
        took = self.start_installed()
        log.info("node sshds up in %.2fs", took)
        while not self.stopping.wait(poll):
            try:
                self.tick()
            except Exception:  # one bad node must not stop supervising the others
                log.exception("supervising nodes")
        self.stop_all()

    def stop_all(self) -> None:
        for node in self.fleet.nodes:
            stop_sshd(self.home, node.name)


def serve(fleet_path: Path, home: Path) -> None:
    fleet = load_fleet(fleet_path, nic_counts(load_skus()))
    sup = NodeSupervisor(fleet, home)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sup.stopping.set())
    sup.run()
