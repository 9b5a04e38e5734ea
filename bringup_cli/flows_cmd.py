"""``bringup discover``, ``bringup commission`` and ``bringup reconcile``: the pipeline
from the command line.

``discover`` calls the library directly (bounded concurrency, rich progress).
``commission`` runs the same Prefect flow the deployment runs, in this process, and
shows each node's stage (read from NetBox) as a progress bar while it runs.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bringup.insight.run_summary import fleet_rows, summary_text
from bringup.lifecycle.engine import PATH, State, parse_state

from .common import console

app = typer.Typer()


def _ctx(config: Path | None):
    from bringup.context import Context
    return Context.from_settings(config)


def _progress(stage: str) -> int:
    """How many states of the commission path a node has passed (all of them when it is
    out of the pipeline: quarantined, inspection)."""
    try:
        state = parse_state(stage)
    except Exception:  # noqa: BLE001  (progress display only)
        return 0
    if state in PATH:
        return PATH.index(state)
    return len(PATH) - 1 if state in (State.QUARANTINED, State.INSPECTION) else 0


@app.command()
def discover(site: str = typer.Option(None), rack: str = typer.Option(None), node: list[str] = typer.Option(None),
             tag: str = typer.Option(None), concurrency: int = typer.Option(32, min=1),
             config: Path = typer.Option(None, help="Settings file.")) -> None:
    """Inventory planned nodes' BMCs over Redfish and verify them against NetBox; findings
    and evidence go to NetBox. Nodes past discovery are only listed (their stage never
    moves back)."""
    from bringup.errors import BringupError
    from bringup.lifecycle.results import StepResult
    from bringup.pipeline import lifecycle, select
    ctx = _ctx(config)
    lc = lifecycle(ctx)
    selected = select(ctx, site=site, rack=rack, tag=tag, names=node or None)
    todo = [s for s in selected if parse_state(s.stage) == State.PLANNED]
    outcomes = [StepResult(node=s.name, step="discover", ok=True, skipped=True, summary=f"already {s.stage}")
                for s in selected if s not in todo]

    def one(name: str) -> StepResult:
        try:
            return lc.run_step(name, State.PLANNED, "discover")
        except BringupError as exc:  # transient BMC trouble: reported, node stays planned
            if not exc.controller_fault:
                lc.hold(name, str(exc))
            return StepResult(node=name, step="discover", ok=False, summary=str(exc))

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console) as progress:
        bar = progress.add_task("discovering", total=len(todo))
        with ThreadPoolExecutor(max_workers=min(concurrency, max(1, len(todo)))) as pool:
            for fut in as_completed([pool.submit(one, s.name) for s in todo]):
                outcomes.append(fut.result())
                progress.advance(bar)
    table = Table("node", "result", "summary")
    for o in sorted(outcomes, key=lambda o: o.node):
        table.add_row(o.node, "[dim]skipped[/]" if o.skipped else ("[green]ok[/]" if o.ok else "[red]failed[/]"),
                      o.summary)
    console.print(table)
    if not all(o.ok for o in outcomes):
        raise typer.Exit(1)


@app.command()
def commission(site: str = typer.Option(None), rack: str = typer.Option(None), node: list[str] = typer.Option(None),
               tag: str = typer.Option(None), burnin_profile: str = typer.Option("quick"),
               dry_run: bool = typer.Option(False), force: bool = typer.Option(False),
               operator: str = typer.Option(None, help="Who asks (journaled with a forced re-test); "
                                                       "default $BRINGUP_OPERATOR, else your user."),
               config: Path = typer.Option(None, help="Settings file.")) -> None:
    """Run the commission flow (discover -> ... -> admit or quarantine) with live progress."""
    if operator:
        os.environ["BRINGUP_OPERATOR"] = operator  # the lifecycle journals it (bringup.settings.operator)
    ctx = _ctx(config)
    if ctx.settings.prefect_api_url:
        os.environ.setdefault("PREFECT_API_URL", ctx.settings.prefect_api_url)
    from bringup.pipeline import lifecycle, select
    from flows.commission import commission as commission_flow  # Prefect only here, in the front end
    selected = select(ctx, site=site, rack=rack, tag=tag, names=node or None)
    config_arg = str(config.resolve()) if config else None
    result: dict = {}

    def run() -> None:
        try:
            result["rows"] = commission_flow(site=site, rack=rack, tag=tag, nodes=node or None,
                                             burnin_profile=burnin_profile, dry_run=dry_run, force=force,
                                             config=config_arg)
        except BaseException as exc:  # noqa: BLE001  (shown after the progress display closes)
            result["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    with Progress(TextColumn("{task.fields[node]:14}"), BarColumn(), TextColumn("{task.fields[stage]}"),
                  TimeElapsedColumn(), console=console) as progress:
        bars = {s.name: progress.add_task("", total=len(PATH) - 1, node=s.name, stage=s.stage) for s in selected}
        while worker.is_alive():
            worker.join(2.0)
            try:
                for rec in ctx.netbox.nodes(names=[s.name for s in selected]):
                    progress.update(bars[rec.name], completed=_progress(rec.stage), stage=rec.stage)
            except Exception:  # noqa: BLE001, S110  (progress is best effort; the flow's own result decides)
                pass
    if "error" in result:
        raise result["error"]
    if dry_run:
        table = Table(*result["rows"][0].keys()) if result["rows"] else Table("node")
        for row in result["rows"]:
            table.add_row(*[str(v) for v in row.values()])
        console.print(table)
        return
    lc = lifecycle(ctx)
    reports = [lc.report(s.name) for s in selected]
    rows = fleet_rows(reports)
    if rows:
        table = Table(*rows[0].keys(), title="commission")
        for row in rows:
            table.add_row(*row.values())
        console.print(table)
    console.print(summary_text(reports))
    if any(r.verdict not in ("admitted", "quarantined") for r in reports):
        raise typer.Exit(1)


@app.command()
def reconcile(site: str = typer.Option(None), rack: str = typer.Option(None), node: list[str] = typer.Option(None),
              tag: str = typer.Option(None), config: Path = typer.Option(None, help="Settings file.")) -> None:
    """Make Kubernetes agree with NetBox: quarantined and inspection nodes cordoned and
    tainted, draining ones cordoned (what the scheduled ``reconcile`` flow does). Exit 1
    when a node could not be made to agree."""
    from bringup.pipeline import reconcile_fleet
    rows = reconcile_fleet(_ctx(config), site=site, rack=rack, tag=tag, names=node or None)
    table = Table("node", "netbox", "kubernetes before", "action", "kubernetes after", "error", title="reconcile")
    for r in rows:
        table.add_row(*r.as_dict().values())
    console.print(table if rows else "no node is out of service in NetBox")
    if any(r.error for r in rows):
        raise typer.Exit(1)


@app.command()
def deploy(config: Path = typer.Option(None, help="Settings file.")) -> None:
    """Register the work pool, concurrency limits and deployments with the Prefect server."""
    ctx = _ctx(config)
    if ctx.settings.prefect_api_url:
        os.environ.setdefault("PREFECT_API_URL", ctx.settings.prefect_api_url)
    from flows.deploy import register
    t = time.monotonic()
    register()
    console.print(f"registered in {time.monotonic() - t:.1f}s: work pool bringup-process, limits, deployments")
