"""The ``reconcile`` flow: Kubernetes made to agree with NetBox for every node out of
service (quarantined or inspection: cordoned and tainted; draining: cordoned).

Deployed on a schedule (every 10 minutes, ``prefect.yaml``), and run by every flow for
its own nodes once they have walked (:func:`converge`, called by
:func:`flows.walk.fan_out`), so a quarantine recorded while the API server was down is
finished as soon as it is back. The logic is :mod:`bringup.service.reconcile`; this
module publishes its table (node, NetBox state, Kubernetes before, action, Kubernetes
after, error) as an artifact and fails the run when a node could not be made to agree.
"""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_table_artifact

from bringup.lifecycle.results import NodeReport
from bringup.service.reconcile import Row, Target

from . import runtime


def _rows(targets: list[Target] | None, config: str | None, **selection) -> list[Row]:
    """The runtime's reconcile ([] from one without a cluster, as the bench's)."""
    return runtime.get(config).reconcile(targets, **selection)


def publish(rows: list[Row], prefix: str) -> None:
    fixed = sum(r.action != "none" and not r.error for r in rows)
    create_table_artifact(key=f"{prefix}-reconcile", table=[r.as_dict() for r in rows],
                          description=(f"{len(rows)} node(s) out of service: {fixed} fixed, "
                                       f"{sum(bool(r.error) for r in rows)} not agreeing yet"))


def unsettled(rows: list[Row]) -> list[str]:
    """What could not be made to agree, one line per node."""
    return [f"{r.node}: NetBox says {r.netbox} but Kubernetes could not be made to agree "
            f"(before: {r.before}; {r.action}): {r.error}" for r in rows if r.error]


def converge(reports: list[NodeReport], *, config: str | None = None, prefix: str = "commission") -> list[str]:
    """Reconcile the nodes a walk just left (their stage and reason as reported);
    publish the table when any of them is out of service; return what is unsettled."""
    targets = [Target(r.node, r.stage, "; ".join(r.reasons)) for r in reports]
    rows = _rows(targets, config)
    if rows:
        publish(rows, prefix)
    return unsettled(rows)


@flow(name="reconcile", log_prints=True)
def reconcile(site: str | None = None, rack: str | None = None, tag: str | None = None,
              nodes: list[str] | None = None, config: str | None = None) -> list[dict]:
    """Cordon and taint every quarantined or inspection node and cordon every draining one
    that Kubernetes shows otherwise (by default: the settings' site)."""
    rows = _rows(None, config, site=site, rack=rack, tag=tag, names=nodes)
    publish(rows, "reconcile")
    bad = unsettled(rows)
    if bad:
        from .walk import RunFailed  # walk imports this module
        raise RunFailed(f"{len(bad)} node(s) out of service in NetBox but not in Kubernetes:\n  "
                        + "\n  ".join(bad[:20]), hint="check the Kubernetes API server and the kubeconfig; "
                                                      "the schedule retries every 10 minutes")
    return [r.as_dict() for r in rows]
