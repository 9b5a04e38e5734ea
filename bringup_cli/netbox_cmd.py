"""``bringup netbox``: apply the schema in netbox/ to NetBox."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from bringup.netbox.schema import Action, load_schema
from bringup.netbox.schema_apply import apply_schema
from bringup.sku import SCHEMA_DIR

from .common import console, netbox, settings

app = typer.Typer(no_args_is_help=True)


@app.command()
def apply(
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would change; write nothing."),
    schema_dir: Path = typer.Option(SCHEMA_DIR, help="Folder holding schema.yaml, device-types/, config-contexts/."),
    config: Path = typer.Option(None, help="Settings file (default: $BRINGUP_CONFIG or the lab's)."),
) -> None:
    """Create or update custom fields, choice sets, tags, roles, device types and config contexts."""
    changes = apply_schema(netbox(settings(config)), load_schema(schema_dir), dry_run=dry_run)
    changed = [c for c in changes if c.action is not Action.NOOP]
    if changed:
        table = Table("action", "kind", "object", "fields")
        for c in changed:
            table.add_row(c.action.value, c.kind, c.key, ", ".join(c.fields))
        console.print(table)
    verb = "would change" if dry_run else "changed"
    console.print(f"{len(changed)} {verb}, {len(changes) - len(changed)} unchanged"
                  + (" — NetBox already matches the schema" if not changed else ""))
