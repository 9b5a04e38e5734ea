"""``bringup discover`` and ``bringup commission``: the pipeline from the command line.

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

from ..lifecycle import ORDER, PIPELINE
from ..report import fleet_rows, summary_text
from .common import console

app = typer.Typer()


def _ctx(config: Path | None):
    from .. import stages
    return stages.Context.from_settings(config)


@app.command()
def discover(site: str = typer.Option(None), rack: str = typer.Option(None), node: list[str] = typer.Option(None),
             tag: str = typer.Option(None), concurrency: int = typer.Option(32, min=1),
             config: Path = typer.Option(None, help="Settings file.")) -> None:
    """Inventory BMCs over Redfish and verify them against NetBox; findings go to NetBox."""
    from .. import stages
    ctx = _ctx(config)
    selected = stages.select(ctx, site=site, rack=rack, tag=tag, names=node or None)
    outcomes = []
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console) as progress:
        bar = progress.add_task("discovering", total=len(selected))
        with ThreadPoolExecutor(max_workers=min(concurrency, max(1, len(selected)))) as pool:
            futures = {pool.submit(stages.discover, ctx, s.name): s.name for s in selected}
            for fut in as_completed(futures):
                try:
                    outcomes.append(fut.result())
                except Exception as exc:  # transient BMC trouble: reported, node stays planned
                    from ..lifecycle import Outcome
                    outcomes.append(Outcome(node=futures[fut], stage="discovered", ok=False, summary=str(exc)))
                progress.advance(bar)
    table = Table("node", "result", "summary")
    for o in sorted(outcomes, key=lambda o: o.node):
        table.add_row(o.node, "[green]ok[/]" if o.ok else "[red]failed[/]", o.summary)
    console.print(table)
    if not all(o.ok for o in outcomes):
        raise typer.Exit(1)


@app.command()
def commission(site: str = typer.Option(None), rack: str = typer.Option(None), node: list[str] = typer.Option(None),
               tag: str = typer.Option(None), burnin_profile: str = typer.Option("quick"),
               dry_run: bool = typer.Option(False), force: bool = typer.Option(False),
               config: Path = typer.Option(None, help="Settings file.")) -> None:
    """Run the commission flow (discover -> ... -> admit or quarantine) with live progress."""
    ctx = _ctx(config)
    if ctx.settings.prefect_api_url:
        os.environ.setdefault("PREFECT_API_URL", ctx.settings.prefect_api_url)
    from flows.commission import commission as commission_flow  # Prefect only here, in the front end

    from .. import stages
    selected = stages.select(ctx, site=site, rack=rack, tag=tag, names=node or None)
    result: dict = {}

    def run() -> None:
        try:
            result["rows"] = commission_flow(site=site, rack=rack, tag=tag, nodes=node or None,
                                             burnin_profile=burnin_profile, dry_run=dry_run, force=force)
        except BaseException as exc:  # shown after the progress display closes
            result["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    with Progress(TextColumn("{task.fields[node]:14}"), BarColumn(), TextColumn("{task.fields[stage]}"),
                  TimeElapsedColumn(), console=console) as progress:
        bars = {s.name: progress.add_task("", total=len(PIPELINE), node=s.name, stage=s.stage) for s in selected}
        while worker.is_alive():
            worker.join(2.0)
            try:
                for rec in ctx.netbox.nodes(names=[s.name for s in selected]):
                    done = len(PIPELINE) if rec.stage == "quarantined" else ORDER.index(rec.stage)
                    progress.update(bars[rec.name], completed=done, stage=rec.stage)
            except Exception:  # progress is best effort; the flow's own result decides
                pass
    if "error" in result:
        raise result["error"]
    if dry_run:
        table = Table(*result["rows"][0].keys()) if result["rows"] else Table("node")
        for row in result["rows"]:
            table.add_row(*[str(v) for v in row.values()])
        console.print(table)
        return
    reports = [stages.report(ctx, s.name) for s in selected]
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
def deploy(config: Path = typer.Option(None, help="Settings file.")) -> None:
    """Register the work pool, concurrency limits and deployments with the Prefect server."""
    ctx = _ctx(config)
    if ctx.settings.prefect_api_url:
        os.environ.setdefault("PREFECT_API_URL", ctx.settings.prefect_api_url)
    from flows.deploy import register
    t = time.monotonic()
    register()
    console.print(f"registered in {time.monotonic() - t:.1f}s: work pool bringup-process, limits, deployments")
