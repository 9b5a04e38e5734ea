"""``bringup accept --pool P``: the pool acceptance run (issue #28) on demand: the pool's
production image trains, checkpoints and restores through its Kueue queue; the verdict
with its figures goes to NetBox, and a pool that does not pass keeps its new nodes out of
service (held, cordoned) with the reason. Exit 0 on a pass, 1 otherwise."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .common import console

app = typer.Typer()


def _context(config: Path | None):
    """The run's context and the lifecycle's hold (one place for tests to replace)."""
    from bringup.context import Context
    from bringup.pipeline import lifecycle
    ctx = Context.from_settings(config)
    return ctx, lifecycle(ctx).hold


def show(result) -> None:
    from bringup.workload.record import figure_text
    v = result.verdict
    colour = {"pass": "green", "fail": "red", "unknown": "yellow"}[v.outcome]
    table = Table("figure", "value", title=f"pool {v.pool}: acceptance [{colour}]{v.outcome.upper()}[/]")
    for key, value in v.figures.items():
        table.add_row(key, figure_text(key, value))
    console.print(table)
    for r in v.reasons:
        console.print(f"[red]-[/] {r}", highlight=False)
    for u in v.unknown:
        console.print(f"[yellow]- unknown:[/] {u}", highlight=False)
    if result.held:
        console.print(f"held out of service: {', '.join(result.held)}", highlight=False)
    for p in result.problems:
        console.print(f"[yellow]{p}[/]", highlight=False)


@app.command()
def accept(pool: Annotated[str, typer.Option("--pool", help="Node pool name (NetBox tag pool-<name>).")],
           run_id: Annotated[str, typer.Option("--run-id", help="Names the Job (accept-<pool>-<run id>); "
                                                                 "default: the time.")] = "",
           config: Annotated[Path | None, typer.Option(help="Settings file.")] = None) -> None:
    """Run POOL's acceptance job and record its verdict in NetBox."""
    from bringup.workload.pool import accept_pool
    run_id = run_id or dt.datetime.now(dt.UTC).strftime("%Y%m%d%H%M%S")
    ctx, hold = _context(config)
    result = accept_pool(ctx, pool, run_id, hold=hold,
                         progress=lambda m: console.print(f"[dim]{m}[/]", highlight=False))
    show(result)
    raise typer.Exit(0 if result.verdict.passed else 1)
