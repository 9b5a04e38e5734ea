"""The blast-radius guard in a run: ask before taking serving nodes out of service, show
the answer as the run's artifact, and say what the run must do with the refused ones.

Every runtime has a guard (:meth:`flows.runtime.Runtime.guard`); the bench's allows
every node, saying so in each decision.
"""

from __future__ import annotations

from prefect import get_run_logger
from prefect.artifacts import create_table_artifact

from bringup.service.blastradius import Decision, Request, refusals

from . import runtime
from .artifacts import _key


def ask(requests: list[Request], *, config: str | None = None, prefix: str) -> list[Decision]:
    """The guard's decisions (refused nodes already journaled in NetBox), published as the
    run's ``<prefix>-guard`` table when any was refused."""
    if not requests:
        return []
    decisions = runtime.get(config).guard(requests)
    refused = [d for d in decisions if not d.allowed]
    if refused:
        create_table_artifact(key=_key(f"{prefix}-guard"), table=[d.as_dict() for d in decisions],
                              description=refusals(decisions).splitlines()[0])
        get_run_logger().error(refusals(decisions))
    return decisions


def allowed(selected: list, decisions: list[Decision]) -> list:
    """The selected nodes the guard did not refuse (all of them when nothing was asked)."""
    refused = {d.node for d in decisions if not d.allowed}
    return [s for s in selected if s.name not in refused]
