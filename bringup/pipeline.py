"""The step functions of the lifecycle, one module per state's work, and the factory of
the real :class:`~bringup.lifecycle.engine.Lifecycle` built from a :class:`~bringup.context.Context`.

Each step function takes the context, the node's NetBox record and the run's parameters,
does its one piece of work through the adapters and returns a
:class:`~bringup.lifecycle.results.StepResult`. None of them writes the node's stage.
"""

from __future__ import annotations

from functools import partial

from bringup.acceptance.burnin_step import burn_in
from bringup.acceptance.judge_step import judge
from bringup.admission.gate_step import gate
from bringup.admission.kube_steps import cluster_labels, drain, drain_node, isolate, join
from bringup.admission.share_step import share
from bringup.context import Context
from bringup.discovery.discover_step import discover
from bringup.fabric.fabric_step import fabric
from bringup.lifecycle.engine import Lifecycle
from bringup.lifecycle.select import Selected, due_for_reburnin, select
from bringup.netbox.records import NetBoxRecords
from bringup.provision.configure_steps import bios, configure
from bringup.provision.firmware_step import firmware
from bringup.provision.install_step import install
from bringup.service.reconcile import Row, Target, reconcile_fleet, reconcile_targets

#: step name (as in lifecycle.TABLE) -> function(ctx, node, params)
STEPS = {"discover": discover, "firmware": firmware, "bios": bios, "install": install, "configure": configure,
         "burn_in": burn_in,
         "judge": judge, "fabric": fabric, "share": share, "join": join, "gate": gate, "drain": drain}


def engine(ctx: Context, steps: dict, *, records: NetBoxRecords | None = None, **hooks) -> Lifecycle:
    """A lifecycle over ``ctx``'s NetBox running ``steps``: what every engine takes from the
    site's settings (the result spool, the lease renewal cadence) is set here and only here,
    for the real one (:func:`lifecycle`) and for the scale bench's, whose steps are stand-ins."""
    from bringup.netbox.spool import Spool
    return Lifecycle(steps=steps, records=records if records is not None else NetBoxRecords(ctx),
                     spool=Spool(ctx.settings.spool_path()), renew_every=ctx.settings.lease_renew_every_s,
                     **hooks)


def lifecycle(ctx: Context) -> Lifecycle:
    """The real lifecycle: NetBox records, Redfish/SSH/Kubernetes steps."""
    from bringup.service.guard import repeat_offender
    # the records port is NetBox only: an admitted node's labels come from the cluster, read here
    records = NetBoxRecords(ctx, labels=partial(cluster_labels, ctx))
    steps = {name: partial(fn, ctx) for name, fn in STEPS.items()}
    lc = engine(ctx, steps, records=records, on_quarantine=partial(isolate, ctx),
                repeat_offender=partial(repeat_offender, ctx))
    # a drain says in NetBox what holds it while it waits, through the lifecycle's own writer
    steps["drain"] = partial(drain, ctx, waiting=lc.hold)
    lc.on_drain = partial(drain_node, ctx, waiting=lc.hold)
    return lc


__all__ = ["STEPS", "Row", "Selected", "Target", "due_for_reburnin", "engine", "lifecycle", "reconcile_fleet",
           "reconcile_targets", "select"]
