"""What the stand-in kubelet does for its node itself, beside running pods:

* records the Events a kubelet records when it sees a cordon come or go
  (``NodeNotSchedulable`` / ``NodeSchedulable``, source ``kubelet``);
* renews the node's heartbeat Lease (``kube-node-lease/<node>``, every 10 s, as the
  kubelet's default) while the node answers SSH, so ``kubectl describe node`` shows a
  Lease and a silent node's renew time falls behind as a dead kubelet's would;
* expires Events an hour after they were last seen, as the API server's ``--event-ttl``
  does by default, so a long-running lab does not pile them up;
* stands in for the Node Problem Detector a site runs on every node: gives each fleet
  node NPD's default conditions as NPD initialises them (``KernelDeadlock`` /
  ``ReadonlyFilesystem`` False; tests/fixtures/kube/node-npd-conditions.json). Whoever
  plays a problem sets them True through ``nodes/status``, as NPD would.

Only fleet nodes (those with an SSH endpoint) get a Lease and NPD conditions: the others
have no machine behind them.
"""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
from typing import Any

from . import events
from .resources import find
from .store import Store, now_rfc3339

NODES = find("", "v1", "nodes")
EVENTS = find("", "v1", "events")
EVENT_TTL_S = 3600
LEASES = find("coordination.k8s.io", "v1", "leases")
LEASE_NS = "kube-node-lease"
RENEW_S = 10.0
LEASE_DURATION_S = 40
#: NPD's default kernel-monitor conditions, as it initialises them: (type, reason, message)
NPD_DEFAULTS = (("KernelDeadlock", "KernelHasNoDeadlock", "kernel has no deadlock"),
                ("ReadonlyFilesystem", "FilesystemIsNotReadOnly", "Filesystem is not read-only"))


def _micro_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _answers(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


class NodeAgent:
    def __init__(self, store: Store, endpoints: dict[str, tuple[str, int]]) -> None:
        self.store = store
        self.endpoints = endpoints
        self._lock = threading.Lock()
        self._cordons: list[tuple[dict[str, Any], str]] = []
        self._gone: list[str] = []
        self._renewed: dict[str, float] = {}
        self._next_gc = 0.0

    def on_node_write(self, old: dict | None, new: dict | None) -> None:
        """Store hook: note a cordon change or a deletion; acted on by ``tick``, not inside
        the hook."""
        if old is not None and new is None:
            with self._lock:
                self._gone.append(old["metadata"]["name"])  # its Lease goes with it (owner reference)
        if old is None or new is None:
            return
        was = bool((old.get("spec") or {}).get("unschedulable"))
        now = bool((new.get("spec") or {}).get("unschedulable"))
        if was != now:
            with self._lock:
                self._cordons.append((new, "NodeNotSchedulable" if now else "NodeSchedulable"))

    def tick(self) -> None:
        with self._lock:
            todo, self._cordons = self._cordons, []
            gone, self._gone = self._gone, []
        for name in gone:
            with self.store.lock:
                if self.store.find(LEASES, LEASE_NS, name) is not None:
                    self.store.delete(LEASES, LEASE_NS, name)
            self._renewed.pop(name, None)
        for node, reason in todo:
            name = node["metadata"]["name"]
            events.record(self.store, node, reason, f"Node {name} status is now: {reason}", host=name)
        if time.monotonic() >= self._next_gc:
            self._next_gc = time.monotonic() + 60
            expire_events(self.store)
        for name, (address, port) in self.endpoints.items():
            if self.store.find(NODES, "", name) is None:
                continue
            self._npd_defaults(name)
            if time.monotonic() - self._renewed.get(name, -RENEW_S) >= RENEW_S and _answers(address, port):
                self._renew(name)

    def _renew(self, name: str) -> None:
        self._renewed[name] = time.monotonic()
        with self.store.lock:
            lease = self.store.find(LEASES, LEASE_NS, name)
            if lease is None:
                node = self.store.find(NODES, "", name)
                owner = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}]
                self.store.create(LEASES, LEASE_NS, {
                    "metadata": {"name": name, "ownerReferences": owner},
                    "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_S,
                             "renewTime": _micro_now()}})
            else:
                lease.setdefault("spec", {})["renewTime"] = _micro_now()
                self.store.replace(LEASES, LEASE_NS, name, lease, check_rv=False)

    def _npd_defaults(self, name: str) -> None:
        with self.store.lock:
            node = self.store.find(NODES, "", name)
            if node is None:
                return
            conds = node.setdefault("status", {}).setdefault("conditions", [])
            have = {c.get("type") for c in conds}
            missing = [d for d in NPD_DEFAULTS if d[0] not in have]
            if not missing:
                return
            ts = now_rfc3339()
            conds.extend({"type": t, "status": "False", "reason": r, "message": m, "lastHeartbeatTime": ts,
                          "lastTransitionTime": ts} for t, r, m in missing)
            self.store.replace(NODES, "", name, node, check_rv=False)


def expire_events(store: Store, ttl_s: float = EVENT_TTL_S) -> int:
    """Delete Events last seen more than ``ttl_s`` ago; returns how many."""
    cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=ttl_s)

    def old(e: dict[str, Any]) -> bool:
        seen = e.get("lastTimestamp") or e.get("eventTime") or e["metadata"].get("creationTimestamp")
        try:
            return bool(seen) and dt.datetime.fromisoformat(seen) < cutoff
        except ValueError:
            return False
    with store.lock:
        stale, _ = store.list(EVENTS, None, old)
        for e in stale:
            store.delete(EVENTS, e["metadata"]["namespace"], e["metadata"]["name"])
    return len(stale)

