"""``bringup metrics``: the fleet as Prometheus metrics, read from NetBox through
:mod:`bringup.insight.fleetdata` (see :mod:`bringup.insight.metrics` for the names).

``serve`` is an exporter for Prometheus to scrape; ``textfile`` writes one snapshot for
node_exporter's textfile collector (e.g. from a systemd timer or cron).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Annotated

import typer

from .common import console

app = typer.Typer(no_args_is_help=True)

Config = Annotated[Path | None, typer.Option(help="Settings file.")]


def _loader(config: Path | None, site: str | None, rack: str | None):
    """A function that reads the fleet's tables from NetBox (one place for tests to replace).
    The settings and connection are made once; each call reads NetBox afresh."""
    from bringup.insight.fleetdata import load

    from .common import netbox, settings
    nb = netbox(settings(config))
    return lambda: load(nb, site=site or None, rack=rack or None)


def _wait_forever() -> None:
    """Until Ctrl-C or SIGTERM's KeyboardInterrupt (a test replaces it)."""
    threading.Event().wait()


@app.command()
def serve(site: str = typer.Option(None, help="Only this site's nodes."),
          rack: str = typer.Option(None, help="Only this rack's nodes."),
          port: int = typer.Option(9835, min=0, max=65535, help="Port of /metrics (0: any free one)."),
          address: str = typer.Option("127.0.0.1", help="Address to listen on (0.0.0.0: every interface)."),
          refresh: float = typer.Option(60.0, min=1.0, help="Seconds between reloads from NetBox (at most one "
                                                              "reload per this time)."),
          config: Config = None) -> None:
    """Serve /metrics: every node's stage, verdict, last burn-in, key figures and GPU-hours.
    NetBox is read in the background; a scrape gets the last snapshot at once."""
    from bringup.insight.metrics_server import serve as start

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = start(_loader(config, site, rack), port=port, address=address, refresh=refresh)
    console.print(f"serving http://{address}:{server.port}/metrics (reload every {refresh:g}s; Ctrl-C stops)")
    try:
        _wait_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


@app.command()
def textfile(out: Annotated[Path, typer.Option(help="The .prom file to write (node_exporter's textfile directory).")],
             site: str = typer.Option(None, help="Only this site's nodes."),
             rack: str = typer.Option(None, help="Only this rack's nodes."),
             config: Config = None) -> None:
    """Write one snapshot in the textfile format, atomically (a temporary file renamed over
    OUT), so node_exporter never reads half of it."""
    import pandas as pd

    from bringup.insight.metrics import FleetCollector, families, registry_of, write_textfile

    now = time.time()
    fd = _loader(config, site, rack)()
    collector = FleetCollector()
    collector.update(families(fd, pd.Timestamp(now, unit="s", tz="UTC")), now)
    write_textfile(out, registry_of(collector))
    console.print(f"wrote {out}: {len(fd.nodes)} node(s)", highlight=False)
    if not fd.findings.empty:
        console.print(f"[yellow]{len(fd.findings)} evidence document(s) could not be read[/] "
                      "(counted in bringup_unreadable_documents)")
