"""The step functions of the lifecycle, one module per state's work, and the factory of
the real :class:`~bringup.lifecycle.Lifecycle` built from a :class:`~bringup.context.Context`.

Each step function takes the context, the node's NetBox record and the run's parameters,
does its one piece of work through the adapters and returns a
:class:`~bringup.results.StepResult`. None of them writes the node's stage.
"""

from __future__ import annotations

from functools import partial

from ..context import Context
from ..lifecycle import Lifecycle
from ..records import NetBoxRecords
from .admit import drain, drain_node, isolate, join
from .burnin import burn_in
from .discover import discover
from .fabric import fabric
from .firmware import firmware
from .gate import gate
from .install import install
from .judge import judge
from .provision import bios, configure
from .reconcile import Row, Target, reconcile_fleet, reconcile_targets
from .select import Selected, due_for_reburnin, select

#: step name (as in lifecycle.TABLE) -> function(ctx, node, params)
STEPS = {"discover": discover, "firmware": firmware, "bios": bios, "install": install, "configure": configure,
         "burn_in": burn_in,
         "judge": judge, "fabric": fabric, "join": join, "gate": gate, "drain": drain}


def lifecycle(ctx: Context) -> Lifecycle:
    """The real lifecycle: NetBox records, Redfish/SSH/Kubernetes steps."""
    from ..spool import Spool
    from .guard import repeat_offender
    return Lifecycle(steps={name: partial(fn, ctx) for name, fn in STEPS.items()}, records=NetBoxRecords(ctx),
                     on_quarantine=partial(isolate, ctx), on_drain=partial(drain_node, ctx),
                     repeat_offender=partial(repeat_offender, ctx), spool=Spool(ctx.settings.spool_path()))


__all__ = ["STEPS", "Row", "Selected", "Target", "due_for_reburnin", "lifecycle", "reconcile_fleet",
           "reconcile_targets", "select"]
