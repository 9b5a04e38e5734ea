"""``GET /api/v1/namespaces/{ns}/pods/{name}/log``: what ``kubectl logs`` reads.

The stand-in kubelet writes each container's output to a file; this serves it with the
query parameters kubectl sends (``container``, ``follow``, ``tailLines``, ``limitBytes``)
and the real server's refusals: a pod of several containers needs ``container``, and a
container that has not started is "waiting to start".
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .kubelet import PODS, Kubelet
from .store import ApiStatus, Store
from .watch import Stream


def _tail(data: bytes, lines: int) -> bytes:
    if lines <= 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


def _state(pod: dict[str, Any], container: str) -> dict[str, Any]:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == container:
            return cs.get("state") or {}
    return {}


def pod_log(store: Store, kubelet: Kubelet, ns: str, name: str, q: dict[str, str]) -> str | Stream:
    pod = store.get(PODS, ns, name)
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    container = q.get("container") or ""
    if not container:
        if len(names) != 1:
            raise ApiStatus(400, f"a container name must be specified for pod {name}, choose one of: "
                                 f"[{' '.join(names)}]")
        container = names[0]
    if container not in names:
        raise ApiStatus(400, f"container {container} is not valid for pod {name}")
    state = _state(pod, container)
    if "waiting" in state or not state:
        why = (state.get("waiting") or {}).get("reason", "ContainerCreating")
        raise ApiStatus(400, f'container "{container}" in pod "{name}" is waiting to start: {why}')
    path = kubelet.log_path(ns, name, container)
    data = path.read_bytes() if path.exists() else b""
    if q.get("tailLines"):
        data = _tail(data, int(q["tailLines"]))
    if q.get("limitBytes"):
        data = data[:int(q["limitBytes"])]
    if q.get("follow") not in ("true", "1") or "terminated" in state:
        return data.decode(errors="replace")
    return Stream(_follow(store, ns, name, container, path, data), "text/plain")


def _follow(store: Store, ns: str, name: str, container: str, path: Path, first: bytes) -> Iterator[bytes]:
    """What the file holds now, then what the command writes until its container ends."""
    if first:
        yield first
    offset = path.stat().st_size if path.exists() else 0
    while True:
        pod = store.find(PODS, ns, name)
        done = pod is None or "terminated" in _state(pod, container)
        if path.exists() and path.stat().st_size > offset:
            with open(path, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
            offset += len(chunk)
            yield chunk
            continue
        if done:
            return
        time.sleep(0.2)
