"""Helpers shared by the CLI modules: settings, connections, console."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from bringup.netbox.adapter import NetBox, connect
from bringup.settings import Settings, load_settings

console = Console()


def settings(path: Path | None = None) -> Settings:
    return load_settings(path)


def netbox(s: Settings) -> NetBox:
    return NetBox(connect(s.netbox_url, s.netbox_token()))
