"""Node leases a run keeps between the two legs of a node's walk.

A commission walks each node to ``fabric``, runs the pools' fabric test, then walks the
nodes that passed on (flows.fabric). The node stays this run's all along, so the lease
taken for the first leg is kept with its renewer running (:func:`keep`), the test records
each node's share under it, and the second leg takes it over (:func:`take`) instead of
giving the lease back and claiming it again: a claim, a release, a full read of the node
and its report fewer per node (issue #25). Whatever is still kept when the run's fabric
stage ends (a node the test failed or held) is given back then (:func:`release`).

Only within one process (one flow run), and only under the run's own holder: a holder
that is not stable from one leg to the next (a walk outside a flow run) keeps nothing.
"""

from __future__ import annotations

import logging
import threading
from contextlib import ExitStack

log = logging.getLogger(__name__)
_lock = threading.Lock()
_kept: dict[tuple[str, str], ExitStack] = {}


def keep(node: str, holder: str, lease: ExitStack) -> None:
    """Keep ``node``'s lease (its renewer, and giving it back) for the run's next leg."""
    with _lock:
        old = _kept.pop((node, holder), None)
        _kept[(node, holder)] = lease
    if old is not None:   # never two renewers of one lease
        old.close()


def holds(node: str, holder: str) -> bool:
    """Whether this process keeps ``node``'s lease for ``holder``."""
    with _lock:
        return (node, holder) in _kept


def take(node: str, holder: str) -> ExitStack | None:
    """The lease kept for ``node`` under ``holder``, now the caller's to close."""
    with _lock:
        return _kept.pop((node, holder), None)


def release(nodes: list[str]) -> int:
    """Give back every lease still kept for ``nodes`` (the run's fabric stage is over);
    how many there were. A failure to give one back is logged: the lease then runs out."""
    wanted = set(nodes)
    with _lock:
        mine = [k for k in _kept if k[0] in wanted]
        stacks = [_kept.pop(k) for k in mine]
    for stack in stacks:
        try:
            stack.close()
        except Exception as exc:  # noqa: BLE001 - one lease not given back must not keep the others
            log.warning("could not give a kept lease back (it runs out by itself): %s", exc)
    return len(stacks)
