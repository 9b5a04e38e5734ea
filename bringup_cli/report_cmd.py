"""``bringup report``: the fleet report (HTML page, CSV and Parquet) from NetBox, read through
:mod:`bringup.insight.fleetdata` and drawn by :mod:`bringup.insight.fleetreport`."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from .common import console

app = typer.Typer()


def _fleet(config: Path | None, site: str | None, rack: str | None):
    """The settings and the fleet's tables (one place for tests to replace)."""
    from bringup.insight.fleetdata import load

    from .common import netbox, settings
    s = settings(config)
    return s, load(netbox(s), site=site or None, rack=rack or None)


@app.command()
def report(out: Annotated[Path, typer.Option("--out", help="Folder for index.html and data/.")],
           site: str = typer.Option(None), rack: str = typer.Option(None), pool: str = typer.Option(None),
           at: str = typer.Option(None, help="Ledger time (ISO 8601, UTC if no zone); default now."),
           config: Annotated[Path | None, typer.Option(help="Settings file.")] = None) -> None:
    """A self-contained HTML page of the fleet (busbw by SKU with threshold and peer band,
    per-GPU heatmap, verdicts and reasons over time, planned to serving; faulty nodes
    marked) and its tables as CSV and Parquet under OUT/data."""
    from bringup.insight.fleetreport import select, write
    try:
        when = pd.Timestamp(at) if at else pd.Timestamp(datetime.now(UTC))
    except ValueError as exc:
        raise typer.BadParameter(f"{at!r} is not an ISO 8601 time: {exc}", param_hint="--at") from None
    when = when.tz_localize("UTC") if when.tzinfo is None else when
    s, fd = _fleet(config, site, rack)
    fd = select(fd, pool or None)  # the loader filters site and rack; the pool is a column
    index = write(out, fd, at=when, gpu_hour_usd=s.gpu_hour_usd, pool=pool or None,
                  filters={"site": site, "rack": rack})
    console.print(f"{len(fd.nodes)} nodes; report: {index.resolve()}", highlight=False, soft_wrap=True)
    if not fd.findings.empty:
        console.print(f"[yellow]{len(fd.findings)} evidence document(s) could not be read[/]; listed on the page")
