"""The ``bringup`` command line (Typer + rich).

Each area has its own module in this package exposing a Typer ``app``; this module
only stitches them together and turns :class:`~bringup.errors.BringupError` into a
clear message and exit code 2 instead of a traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console

from ..errors import BringupError

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Bare-metal provisioning and burn-in for GPU fleets.")
err = Console(stderr=True)

#: (module under bringup.cli, command group name, help). Modules that are not there yet
#: are skipped so that one area can land before another.
GROUPS = [
    ("lab", "lab", "Run the lab: a simulated fleet around real NetBox and Prefect."),
    ("netbox_cmd", "netbox", "NetBox schema as code."),
    ("redfish_cmd", None, "Discovery over Redfish."),
    ("image_cmd", "image", "OS image manifests."),
    ("flows_cmd", None, "Commission and re-burn-in."),
]

for module, name, help_ in GROUPS:
    try:
        mod = importlib.import_module(f"{__name__}.{module}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{module}":
            raise
        continue
    if name:
        app.add_typer(mod.app, name=name, help=help_)
    else:  # top-level commands
        for cmd in mod.app.registered_commands:
            app.registered_commands.append(cmd)


def main() -> None:
    try:
        app()
    except BringupError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)
