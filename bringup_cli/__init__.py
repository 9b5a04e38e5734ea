"""The ``bringup`` command line (Typer + rich): the front end.

This package is the only code that imports the library (``bringup``), the flows
(``flows``) and the lab (``lab``) together; the library never imports it. Each area has
its own module exposing a Typer ``app``; this module stitches them together and turns
:class:`~bringup.errors.BringupError` into a clear message and exit code 2 instead of a
traceback.

The lab is not in the wheel: ``lab`` is imported only inside the ``bringup lab``
commands, and without it every one of them says so in one line (``--help`` still lists
them).
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console
from rich.markup import escape

from bringup.errors import BringupError

from .common import default_to_lab_settings, lab_installed

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
    ("node_cmd", "node", "One node by hand: record a repair (then re-burn-in and the gate)."),
    ("accept_cmd", None, "A pool's acceptance run: train, checkpoint, restore, verdict in NetBox."),
    ("parse_cmd", "parse", "Judge a recorded tool output (nccl-tests, DCGM, gpu-burn, ibstat)."),
]

#: what every ``bringup lab`` command says where the lab package is missing (a wheel)
NO_LAB = "the lab is not installed: run from a checkout"


def _need_lab() -> None:
    """Runs before any ``bringup lab`` command: one line, not an ImportError's traceback."""
    if not lab_installed():
        err.print(f"[bold red]error:[/] {NO_LAB}", highlight=False)
        raise typer.Exit(2)


for module, name, help_ in GROUPS:
    mod = importlib.import_module(f"{__name__}.{module}")
    if name == "lab":
        app.add_typer(mod.app, name=name, help=help_, callback=_need_lab)
    elif name:
        app.add_typer(mod.app, name=name, help=help_)
    else:
        for cmd in mod.app.registered_commands:
            app.registered_commands.append(cmd)


def main() -> None:
    default_to_lab_settings()
    try:
        app()
    except BringupError as exc:
        # soft_wrap: one line however narrow the console (80 columns when not a terminal)
        # escape: a message may hold brackets ([::1]:8443, a list) that are not rich markup
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)
