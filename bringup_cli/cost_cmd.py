"""``bringup cost``: the GPU-hours ledger per pool (and per node with ``--nodes``), priced
at the settings' ``gpu_hour_usd``, read from NetBox through :mod:`bringup.insight.fleetdata`."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.table import Table

from .common import console

app = typer.Typer()


def _fleet(config: Path | None, site: str | None, rack: str | None):
    """The settings and the fleet's tables (one place for tests to replace)."""
    from bringup.insight.fleetdata import load

    from .common import netbox, settings
    s = settings(config)
    return s, load(netbox(s), site=site or None, rack=rack or None)


def _acceptances(s, pools: list[str]) -> dict[str, tuple[float | None, str]]:
    """pool -> (accepted samples/s per node, the run it comes from), from NetBox's latest
    pool acceptance of each pool (one place for tests to replace)."""
    from bringup.workload.record import accepted_per_node, latest

    from .common import netbox
    nb = netbox(s)
    out = {}
    for pool in pools:
        doc = latest(nb, pool)
        out[pool] = (accepted_per_node(doc), f"{(doc or {}).get('run', '')} ({(doc or {}).get('outcome', 'none')})")
    return out


def _num(v, fmt: str = "{:,.1f}") -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


@app.command()
def cost(site: str = typer.Option(None), rack: str = typer.Option(None),
         at: str = typer.Option(None, help="Query time (ISO 8601, UTC if no zone); default now."),
         nodes: bool = typer.Option(False, "--nodes", help="Also one row per node."),
         config: Annotated[Path | None, typer.Option(help="Settings file.")] = None) -> None:
    """GPU-hours by account (burn-in, quarantine, waiting, serving), failed burn-ins, time
    from planned to serving, and the effective cost per accepted node: every GPU-hour
    spent, serving or not, over the nodes that reached serving."""
    from bringup.insight.ledger import node_ledger, pool_ledger
    try:
        when = pd.Timestamp(at) if at else pd.Timestamp(datetime.now(UTC))
    except ValueError as exc:
        raise typer.BadParameter(f"{at!r} is not an ISO 8601 time: {exc}", param_hint="--at") from None
    s, fd = _fleet(config, site, rack)
    when = when.tz_localize("UTC") if when.tzinfo is None else when
    per_node = node_ledger(fd.nodes, fd.stages, when, s.gpu_hour_usd)
    pools = pool_ledger(per_node)
    table = Table("pool", "nodes", "accepted", "burn-in GPU-h", "quarantine GPU-h", "waiting GPU-h",
                  "serving GPU-h", "failed burn-in GPU-h", "planned→serving h (median)", "cost $",
                  "$ per accepted node", title=f"GPU-hours and cost at {s.gpu_hour_usd:g} $/GPU-h, "
                                               f"until {when.isoformat(timespec='minutes')}")
    for pool, r in pools.iterrows():
        table.add_row(f"[bold]{pool}[/]" if pool == "all" else str(pool), str(int(r["nodes"])), str(int(r["accepted"])),
                      *(_num(r[f"{a}_gpu_h"]) for a in ("burnin", "quarantine", "waiting", "serving")),
                      _num(r["failed_burnin_gpu_h"]), _num(r["planned_to_serving_h"]),
                      _num(r["total_cost_usd"], "{:,.0f}"), _num(r["cost_per_accepted_usd"], "{:,.0f}"))
    console.print(table)
    _unit_costs(s, pools)
    if nodes:
        nt = Table("node", "pool", "GPUs", "burn-in h", "quarantine h", "waiting h", "serving h",
                   "failed burn-in GPU-h", "planned→serving h", "cost $")
        for name, r in per_node.sort_index().iterrows():
            nt.add_row(str(name), str(r["pool"]), str(int(r["gpus"])), _num(r["burnin_h"]), _num(r["quarantine_h"]),
                       _num(r["waiting_h"]), _num(r["serving_h"]), _num(r["failed_burnin_gpu_h"]),
                       _num(r["planned_to_serving_h"]), _num(r["total_cost_usd"], "{:,.0f}"))
        console.print(nt)
    if not fd.findings.empty:
        console.print(f"[yellow]{len(fd.findings)} evidence document(s) could not be read[/] "
                      f"(nodes: {', '.join(sorted(set(fd.findings['node'])))}); the hours above do not depend on them")


def _unit_costs(s, pools) -> None:
    """The guide's normalised cost per pool, each term with its source."""
    from bringup.insight.unitcost import load_rates, unit_cost
    names = [str(p) for p in pools.index if p != "all"]
    accepted = _acceptances(s, names)
    rates = load_rates()
    table = Table("pool", "term", "$", "source", title="Normalised cost: (compute + network + storage + support + "
                  "idle + failed runs + operations) / accepted workload units")
    for pool in names:
        per_node, run = accepted[pool]
        uc = unit_cost(pool, pools.loc[pool], s.gpu_hour_usd, rates, per_node, run)
        for t in uc.terms:
            table.add_row(pool, t.name, _num(t.usd, "{:,.0f}"), t.source)
        table.add_row(pool, "[bold]total[/]", _num(uc.total_usd, "{:,.0f}"), "")
        table.add_row(pool, "accepted units (M samples)", _num(uc.accepted_units_m, "{:,.2f}"), uc.units_source)
        table.add_row(pool, "[bold]$ per M accepted samples[/]", _num(uc.usd_per_m_units, "{:,.2f}"),
                      "total / accepted units" if uc.usd_per_m_units is not None else "unknown: no accepted units",
                      end_section=True)
    console.print(table)
