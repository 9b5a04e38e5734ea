"""Helpers shared by the CLI modules: settings, connections, console.

Without ``--config``, commands read ``$BRINGUP_CONFIG`` (the library's only default).
In a checkout, where the lab is, the front end makes the lab's settings file that
default when the variable is unset (:func:`default_to_lab_settings`, called by
``bringup_cli.main``); an installed wheel has no lab and no such default.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from rich.console import Console

from bringup.netbox.adapter import NetBox, connect
from bringup.settings import Settings, load_settings

console = Console()


def lab_installed() -> bool:
    """True in a checkout: the ``lab`` package is importable (it is not in the wheel)."""
    try:
        return importlib.util.find_spec("lab.paths") is not None
    except ModuleNotFoundError:  # no ``lab`` package at all
        return False


def default_to_lab_settings() -> None:
    """Point ``$BRINGUP_CONFIG`` at the lab's settings file when it is unset and the lab is
    here, so every command of this process, and the flows and processes it starts, read
    the lab's settings as they always did. An operator's ``BRINGUP_CONFIG`` is left alone."""
    if os.environ.get("BRINGUP_CONFIG") or not lab_installed():
        return
    from lab.paths import LabPaths
    os.environ["BRINGUP_CONFIG"] = str(LabPaths.default().config)


def settings(path: Path | None = None) -> Settings:
    return load_settings(path)


def netbox(s: Settings) -> NetBox:
    return NetBox(connect(s.netbox_url, s.netbox_token(), inflight=s.netbox_max_inflight))
