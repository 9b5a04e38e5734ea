"""``bringup node repaired NODE --note ...``: the one way out of hardware inspection (issue
#27, item 5).

An operator records the repair (journaled with who and what); the lifecycle clears the
hardware verdict and moves the node to ``provisioned`` (:meth:`Lifecycle.repaired`, the one
writer of the stage), and the commission flow, run here as ``bringup commission`` runs it,
burns it in again and runs the readiness gate: a pass admits the node with clean reason
fields (the journal keeps the old failure), a fail returns it to inspection (the guard's
repeat-offender rule, :func:`bringup.service.guard.repeat_offender`). Who asked is
``--operator``, else ``$BRINGUP_OPERATOR``, else the OS user.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from bringup.lifecycle.engine import State
from bringup.settings import OPERATOR_ENV, operator

from .common import console

app = typer.Typer(no_args_is_help=True)


@app.command()
def repaired(node: str = typer.Argument(..., help="The node in hardware inspection that was repaired."),
             note: str = typer.Option(..., "--note", help="What was repaired (journaled), e.g. 'GPU 3 replaced'."),
             operator_name: str = typer.Option(None, "--operator",
                                               help="Who repaired it (default $BRINGUP_OPERATOR, else your user)."),
             retest: bool = typer.Option(True, "--retest/--no-retest",
                                         help="Run the re-burn-in and the gate now (else the next commission run)."),
             burnin_profile: str = typer.Option("quick", help="Burn-in profile of the re-test."),
             config: Path = typer.Option(None, help="Settings file.")) -> None:
    """Record a node's repair, clear its hardware verdict, and re-test it: re-burn-in and the
    readiness gate. Exit 0 when it is back in service, 1 when it is not."""
    if operator_name:
        os.environ[OPERATOR_ENV] = operator_name   # the lifecycle's journal entries name them
    from bringup.context import Context
    from bringup.pipeline import lifecycle
    ctx = Context.from_settings(config)
    lc = lifecycle(ctx)
    who = operator()
    lc.repaired(node, note, who)
    console.print(f"{node}: repair recorded by {who} ({note}); hardware verdict cleared, now provisioned")
    if not retest:
        console.print(f"re-test it with: bringup commission --node {node}")
        return
    if ctx.settings.prefect_api_url:
        os.environ.setdefault("PREFECT_API_URL", ctx.settings.prefect_api_url)
    from flows.commission import commission  # Prefect only here, in the front end
    commission(nodes=[node], burnin_profile=burnin_profile, config=str(config.resolve()) if config else None)
    state = lc.state_of(node)
    console.print(f"{node}: {state}" + ("" if state == State.ACTIVE else
                                         " (see its journal in NetBox: the re-test did not pass)"))
    if state != State.ACTIVE:
        raise typer.Exit(1)
