"""``bringup kueue render``: the Kueue ``Topology`` and ``ResourceFlavor`` of a node pool,
from NetBox (the pool's tagged nodes, their racks and the racks' locations as blocks)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import console

app = typer.Typer(no_args_is_help=True)


def _pool_nodes(config: Path | None, pool: str):
    """The pool's nodes as :class:`bringup.admission.kueue.PoolNode` (one place for tests to replace)."""
    from bringup.admission.kueue import PoolNode

    from .common import netbox, settings
    nb = netbox(settings(config))
    records = nb.nodes(tag=f"pool-{pool}")
    blocks: dict[tuple[str, str], str] = {}
    for site in sorted({r.site for r in records}):
        blocks.update(nb.rack_locations(site))
    return [PoolNode(name=r.name, rack=r.rack, block=blocks.get((r.site, r.rack), "")) for r in records]


@app.command()
def render(pool: Annotated[str, typer.Option("--pool", help="Node pool name (NetBox tag pool-<name>).")],
           out: Annotated[Path | None, typer.Option("--out", help="Write <pool>.yaml into this folder "
                                                                  "instead of printing it.")] = None,
           config: Annotated[Path | None, typer.Option(help="Settings file.")] = None) -> None:
    """Write the Kueue Topology (block/rack/hostname levels) and ResourceFlavor (selecting
    the pool's nodes by label) for POOL."""
    from bringup.admission.kueue import render_pool, to_yaml
    nodes = _pool_nodes(config, pool)
    docs = render_pool(pool, nodes)
    racks = sorted({n.rack for n in nodes})
    text = to_yaml(docs, header=f"Kueue topology of pool {pool}: {len(nodes)} nodes in {len(racks)} racks "
                                f"({', '.join(racks)}); rendered by `bringup kueue render` from NetBox")
    if out is None:
        typer.echo(text, nl=False)
        return
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{pool}.yaml"
    path.write_text(text)
    levels = " > ".join(lv["nodeLabel"] for lv in docs[0]["spec"]["levels"])
    console.print(f"wrote {path}: Topology {docs[0]['metadata']['name']} ({levels}) and "
                  f"ResourceFlavor {docs[1]['metadata']['name']} for {len(nodes)} nodes", highlight=False)
