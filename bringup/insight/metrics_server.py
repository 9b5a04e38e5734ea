"""Serving the fleet's metrics over HTTP: a background reloader and the /metrics server.

The reloader fetches the fleet (a ``load`` callable: :func:`bringup.insight.fleetdata.load` on
NetBox in the CLI, built tables in the tests) in its own thread, at most every
``refresh`` seconds, and hands the families to :class:`~bringup.insight.metrics.FleetCollector`;
scrapes only read the last snapshot, so a slow or down NetBox never stalls one. A failed
reload is logged with its reason, keeps the last snapshot and shows as
``bringup_metrics_last_reload_success 0``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from prometheus_client.exposition import start_http_server

from bringup.insight.fleetdata import FleetData
from bringup.insight.metrics import FleetCollector, families, registry_of

log = logging.getLogger(__name__)


class Reloader:
    """Loads the fleet and updates the collector; :meth:`reload` once, :meth:`start` for
    a daemon thread that reloads until :meth:`stop`."""

    def __init__(self, collector: FleetCollector, load: Callable[[], FleetData], refresh: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.collector, self.load, self.refresh, self.clock = collector, load, refresh, clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.loaded = threading.Event()  # set after the first successful reload (tests wait on it)

    def reload(self) -> bool:
        """One reload; False (logged, last snapshot kept) when it fails."""
        started = self.clock()
        try:
            fd = self.load()
            fams = families(fd, pd.Timestamp(started, unit="s", tz="UTC"))
        except Exception as exc:  # noqa: BLE001 - whatever broke, the exporter serves on and says why
            log.warning("metrics reload failed, serving the snapshot of before: %s: %s", type(exc).__name__, exc)
            self.collector.failed()
            return False
        self.collector.update(fams, started)
        self.loaded.set()
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.reload()
            # start to start: a reload that took longer than ``refresh`` is followed at once
            self._stop.wait(max(0.0, self.refresh - (time.monotonic() - began)))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bringup-metrics-reload", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


@dataclass
class MetricsServer:
    """A running exporter: the HTTP server's port, and how to stop it."""

    port: int
    reloader: Reloader
    _httpd: object
    _thread: threading.Thread

    def stop(self) -> None:
        self.reloader.stop()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


def serve(load: Callable[[], FleetData], *, port: int, address: str = "127.0.0.1",
          refresh: float = 60.0) -> MetricsServer:
    """Start serving /metrics on ``address:port`` (0: a free port, see ``.port``) and the
    reloader; both run in daemon threads. The first scrape may come before the first
    load: it shows only ``bringup_metrics_last_reload_success 0``."""
    collector = FleetCollector()
    reloader = Reloader(collector, load, refresh)
    httpd, thread = start_http_server(port, addr=address, registry=registry_of(collector))
    reloader.start()
    return MetricsServer(port=httpd.server_address[1], reloader=reloader, _httpd=httpd, _thread=thread)
