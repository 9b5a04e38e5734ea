"""``bringup image``: show and render OS image manifests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from bringup.provision.image import load_manifest, write_render

app = typer.Typer(no_args_is_help=True, add_completion=False)
out = Console()


@app.command()
def render(name: Annotated[str, typer.Argument(help="manifest name (images/NAME.yaml) or a path")],
           out_dir: Annotated[Path | None, typer.Option("--out", help="folder for user-data and meta-data")] = None,
           hostname: Annotated[str, typer.Option(help="hostname written to meta-data")] = "ubuntu",
           authorized_key: Annotated[list[str] | None, typer.Option(
               "--authorized-key", help="public key allowed to log in (repeatable)")] = None) -> None:
    """Render the Ubuntu autoinstall seed (user-data, meta-data) of an image manifest."""
    manifest = load_manifest(name)
    target = out_dir or Path("build") / "images" / manifest.name
    for path in write_render(manifest, target, hostname=hostname, authorized_keys=authorized_key or []):
        out.print(f"wrote {path}")


@app.command()
def show(name: Annotated[str, typer.Argument(help="manifest name or path")]) -> None:
    """Validate a manifest and print its pinned versions."""
    m = load_manifest(name)
    out.print(f"{m.name}: {m.os.distribution} {m.os.release} kernel {m.os.kernel}")
    out.print(f"  iso {m.iso.url} sha256 {m.iso.sha256}")
    for comp, version in m.packages.model_dump().items():
        out.print(f"  {comp:<11} {version}")
    for pkg, pin in sorted(m.apt.pins.items()):
        out.print(f"    {pkg}={pin.version}")


@app.command()
def seed(name: Annotated[str, typer.Argument(help="manifest name (images/NAME.yaml) or a path")],
         node: Annotated[str, typer.Option(help="the node (hostname) the seed is for")] = "node",
         authorized_key: Annotated[list[str] | None, typer.Option(
             "--authorized-key", help="public key allowed to log in (repeatable)")] = None) -> None:
    """Show a node's install seed as the install step renders it, validated against
    subiquity's schema, with its private host key redacted. The key made for this preview
    is thrown away: the install step makes the node's real key when it installs it."""
    from bringup.provision import hostkeys
    from bringup.provision import install_seed as seeds
    manifest = load_manifest(name)
    files = seeds.render(manifest, hostname=node, host_key=hostkeys.generate(f"root@{node}"),
                         authorized_keys=authorized_key or [])
    typer.echo(seeds.redact(files["user-data"]), nl=False)
    typer.echo("# --- meta-data\n" + "".join(f"# {line}\n" for line in files["meta-data"].splitlines()), nl=False)
