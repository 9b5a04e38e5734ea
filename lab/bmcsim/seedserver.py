"""The web server the lab's BMCs fetch install seeds from: the folder the controller writes
seeds to (``seed_dir``, ``<home>/seeds``), served over plain HTTP on loopback, as a site
serves it to its BMC network. Runs as a thread of the BMC simulator's process.

Only ``/<name>.iso`` files directly in the folder are served; no listings."""

from __future__ import annotations

import logging
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

log = logging.getLogger("lab.bmcsim.seeds")
_NAME = re.compile(r"^/([A-Za-z0-9][A-Za-z0-9._-]*\.iso)$")


class _Handler(BaseHTTPRequestHandler):
    server: SeedServer

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)

    def do_GET(self) -> None:
        m = _NAME.match(self.path)
        path = self.server.folder / m.group(1) if m else None
        try:
            data = path.read_bytes() if path else None
        except OSError:
            data = None
        if data is None:
            self.send_error(404, "no such seed")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-iso9660-image")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class SeedServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], folder: Path) -> None:
        super().__init__(address, _Handler)
        self.folder = folder
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/{{node}}.iso"

    def start(self) -> SeedServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o700)  # the seeds hold nodes' private host keys
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True,
                                        name="seed-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread:
            self._thread.join(timeout=5)


def seed_folder(home: Path) -> Path:
    return home / "seeds"
