"""``bringup bmc``: talk to one BMC directly, without NetBox (bring-up of a new model, triage)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from bringup.discovery.crawl import bmc_inventory, inventory_document, read_password_file
from bringup.errors import BringupError
from bringup.redfish import Credentials

from .common import console

app = typer.Typer(no_args_is_help=True)


@app.command()
def inventory(
    url: Annotated[str, typer.Argument(help="The BMC: host, host:port, https://host[:port] or [IPv6]:port "
                                            "(https, port 443 unless given; http://host[:port] for plain HTTP).")],
    user: Annotated[str, typer.Option("--user", help="BMC user name.")],
    password_file: Annotated[Path, typer.Option("--password-file", help="File holding the password; mode 0600.")],
    ca: Annotated[Path | None, typer.Option("--ca", help="CA bundle that signed the BMC's certificate.")] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help="Do not verify the BMC's TLS certificate.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the inventory as one JSON document.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", min=0.5, help="Seconds to wait for each answer.")] = 10.0,
) -> None:
    """One BMC's typed inventory: system, GPUs (model, serial, memory), CPUs, NICs (name, MAC) and
    what the BMC could not give (``unavailable``). Exit 0 even when partial; exit 2 when the BMC
    refuses the credentials or cannot be reached."""
    if ca is not None and insecure:
        raise typer.BadParameter("give --ca or --insecure, not both")
    try:
        creds = Credentials(user, read_password_file(password_file))
        inv = bmc_inventory(url, creds, ca_bundle=str(ca) if ca else None, insecure=insecure, timeout=timeout)
    except BringupError as exc:
        typer.echo(f"error: {exc}", err=True)   # one line, no secret: the messages never carry one
        raise typer.Exit(2) from None
    doc = inventory_document(inv)
    if as_json:
        typer.echo(json.dumps(doc, indent=2, sort_keys=True))
        return
    s = inv.system
    console.print(f"{s.manufacturer} {s.model}, serial {s.serial}, power {s.power_state} ({len(inv.systems)} "
                  f"system(s))")
    table = Table("kind", "name", "model / MAC", "serial / position")
    for g in inv.gpus:
        table.add_row("GPU", g.id, g.model or "?", g.serial or "?")
    for c in inv.cpus:
        table.add_row("CPU", c.id, c.model or "?", f"{c.cores or '?'} cores")
    for n in inv.nics:
        table.add_row("NIC", n.id, n.mac, f"slot {n.position[0]} port {n.position[1]}" if n.position else "")
    console.print(table)
    for u in inv.unavailable:
        console.print(f"[yellow]unavailable[/] {u.kind}: {u.uri}" + (f" {u.path}" if u.path else "")
                      + f": {u.reason}", highlight=False)
