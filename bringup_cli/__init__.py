"""The ``bringup`` command line (Typer + rich): the front end.

This package is the only code that imports the library (``bringup``), the flows
(``flows``) and the lab (``lab``) together; the library never imports it. Each area has
its own module exposing a Typer ``app``; this module stitches them together and turns
:class:`~bringup.errors.BringupError` into a clear message and exit code 2 instead of a
traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console

from bringup.errors import BringupError

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Bare-metal provisioning and burn-in for GPU fleets.")
err = Console(stderr=True)

#: (module in this package, command group name or None for top-level commands, help)
GROUPS = [
    ("lab", "lab", "Run the lab: a simulated fleet around real NetBox and Prefect."),
    ("netbox_cmd", "netbox", "NetBox schema as code."),
    ("image_cmd", "image", "OS image manifests."),
    ("bmc_cmd", "bmc", "One BMC directly: its Redfish inventory."),
    ("flows_cmd", None, "Commission and re-burn-in."),
    ("cost_cmd", None, "The GPU-hours ledger and cost."),
    ("metrics_cmd", "metrics", "The fleet as Prometheus metrics (an exporter, or a node_exporter textfile)."),
    ("report_cmd", None, "The fleet report: HTML, CSV and Parquet."),
    ("kueue_cmd", "kueue", "Kueue topology-aware scheduling manifests of a pool."),
    ("parse_cmd", "parse", "Judge a recorded tool output (nccl-tests, DCGM, gpu-burn, ibstat)."),
]

for module, name, help_ in GROUPS:
    mod = importlib.import_module(f"{__name__}.{module}")
    if name:
        app.add_typer(mod.app, name=name, help=help_)
    else:
        for cmd in mod.app.registered_commands:
            app.registered_commands.append(cmd)


def main() -> None:
    try:
        app()
    except BringupError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)
