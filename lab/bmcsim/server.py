"""HTTPS transport for the fleet BMC simulator: one listener per BMC, one process.

Each BMC of the fleet profile answers on ``bmc_address:bmc_port`` with a certificate for
that address issued by the lab CA. TLS handshakes run in the per-connection thread, so a
slow client never stalls a listener. Timing faults (``bmc_slow``, ``bmc_timeout``) live
here because they are about the wire, not the resources.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

import yaml

from bringup.sku import SkuSpec
from lab.fleet import Fault, FaultKind, FleetProfile, NodeSpec

from . import pki
from .profile import load_profile
from .service import BmcService, Reply
from .state import BmcState

log = logging.getLogger("lab.bmcsim")
#: how long a ``bmc_timeout`` BMC holds a request before dropping it (never answering)
HANG_SECONDS = 600.0
#: how often the simulator's clock moves every BMC's timeline on (ends of POST, jobs)
TICK_SECONDS = 0.1


def ensure_credentials(home: Path) -> tuple[str, str]:
    """``<home>/secrets/bmc.yaml`` ({default: {username, password}}), created 0600 if missing."""
    path = home / "secrets" / "bmc.yaml"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        doc = {"default": {"username": "admin", "password": secrets.token_urlsafe(18)}}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            yaml.safe_dump(doc, fh)
    data = yaml.safe_load(path.read_text()) or {}
    default = data.get("default") or {}
    return str(default["username"]), str(default["password"])


def load_installer(node: NodeSpec, home: Path):
    """The OS-install hook of the simulated nodes, when that part of the lab exists."""
    try:
        from lab.nodes.install import install_from_media  # type: ignore[import-not-found]
    except ImportError:
        def absent(image_url: str, seed_url: str | None = None, current: Callable[[], bool] | None = None) -> None:
            log.warning("%s: OS install from %s requested, but lab.nodes.install is not available",
                        node.name, image_url)
        return absent

    def install(image_url: str, seed_url: str | None = None, current: Callable[[], bool] | None = None) -> dict:
        # a failure propagates: the BMC state shows it as a failed boot (BootProgress, log)
        return install_from_media(node, image_url, home, seed_url, current=current)
    return install


def load_shutdown(node: NodeSpec, home: Path):
    """What a reset into the installer does to the node's running OS, when the nodes exist."""
    try:
        from lab.nodes.install import going_down  # type: ignore[import-not-found]
    except ImportError:
        return None
    return lambda: going_down(node, home)


def load_injected(node: NodeSpec, home: Path) -> Callable[[], list[Fault]]:
    """The faults ``bringup lab inject`` gave the node while it runs (its ``injected.json``),
    read again whenever the file changed: the BMC's health documents show a fault at the
    next request, and no more once ``bringup lab clear`` took it away."""
    from lab.nodes.sshd import NodeDir
    path = NodeDir(home, node.name).dir / "injected.json"
    seen: dict[str, Any] = {"mtime": None, "faults": []}

    def read() -> list[Fault]:
        try:
            mtime = path.stat().st_mtime_ns
        except FileNotFoundError:
            return []
        if mtime != seen["mtime"]:
            try:
                faults = [Fault.model_validate(f) for f in json.loads(path.read_text())]
            except (OSError, ValueError):
                return seen["faults"]   # caught half-written: the last good reading stands
            seen.update(mtime=mtime, faults=faults)
        return seen["faults"]
    return read


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one TLS handshake per client session
    server: _BmcHttpServer

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.server.service.node.name, format % args)

    def _serve(self) -> None:
        srv = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        node = srv.service.node
        if node.has_fault(FaultKind.BMC_TIMEOUT):
            srv.stopping.wait(HANG_SECONDS)
            self.close_connection = True
            return
        delay = srv.latency + sum(float(f.value or 0) for f in node.faults_of(FaultKind.BMC_SLOW))
        if delay:
            time.sleep(delay)
        url = urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        srv.requests += 1
        reply = srv.service.handle(self.command, url.path, url.query, headers, body)
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        if reply.body is None:
            payload = b""
        elif isinstance(reply.body, str):
            payload = reply.body.encode()
        else:
            payload = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        ctype = reply.headers.get("Content-Type", "application/json; charset=utf-8")
        if payload:
            self.send_header("Content-Type", ctype)
        self.send_header("OData-Version", "4.0")
        for k, v in reply.headers.items():
            if k != "Content-Type":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        # headers and body leave in one write: two small writes on a keep-alive
        # connection meet the client's delayed ACK and cost ~40 ms per response
        self._headers_buffer.append(b"\r\n")
        if self.command != "HEAD":
            self._headers_buffer.append(payload)
        self.flush_headers()

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

    def do_HEAD(self) -> None:
        self._serve()


class _BmcHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], service: BmcService, ctx: ssl.SSLContext,
                 stopping: threading.Event, latency: float) -> None:
        super().__init__(address, _Handler)
        self.service = service
        self.ctx = ctx
        self.stopping = stopping
        self.latency = latency
        self.requests = 0

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup (getfqdn) per listener: 80 ms
        # each here, 20 s for 256 BMCs. Nothing uses the name, so skip it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def finish_request(self, request, client_address) -> None:  # type: ignore[override]
        # the handshake runs here, in the connection's own thread
        try:
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            log.debug("TLS handshake from %s failed: %s", client_address, exc)
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)  # noqa: LOG014


class FleetSimulator:
    """Every BMC of a fleet profile, served from this process (threads)."""

    def __init__(self, fleet: FleetProfile, skus: dict[str, SkuSpec], home: Path, *,
                 power_delay: float = 1.0, latency: float = 0.0, nodes: Iterable[str] | None = None) -> None:
        self.fleet = fleet
        self.home = Path(home)
        self.stopping = threading.Event()
        username, password = ensure_credentials(self.home)
        wanted = set(nodes) if nodes is not None else None
        self.services: dict[str, BmcService] = {}
        self.servers: list[_BmcHttpServer] = []
        self._threads: list[threading.Thread] = []
        pki.ensure_ca(self.home / "pki")
        for node in fleet.nodes:
            if wanted is not None and node.name not in wanted:
                continue
            state = BmcState(node=node, sku=skus[node.sku], profile=load_profile(node.bmc_vendor),
                             power_delay=power_delay, installer=load_installer(node, self.home),
                             os_down=load_shutdown(node, self.home), injected=load_injected(node, self.home))
            service = BmcService(state, username, password)
            cert, key = pki.ensure_bmc_cert(self.home / "pki", node.bmc_address)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            self.services[node.name] = service
            try:
                self.servers.append(_BmcHttpServer((node.bmc_address, node.bmc_port), service, ctx,
                                                   self.stopping, latency))
            except OSError as exc:
                # name the endpoint: "Address already in use" alone does not say which
                raise OSError(exc.errno, f"BMC of {node.name} on {node.bmc_address}:{node.bmc_port}: "
                                         f"{exc.strerror}") from exc

    @property
    def ca_bundle(self) -> Path:
        return self.home / "pki" / "ca.pem"

    def _tick(self) -> None:
        """End POSTs and jobs on time even when nobody asks the BMC (an OS install starts at
        the end of POST while the client only waits for SSH)."""
        while not self.stopping.wait(TICK_SECONDS):
            for service in self.services.values():
                try:
                    service.state.tick()
                except Exception:
                    log.exception("%s: tick failed", service.node.name)

    def start(self) -> FleetSimulator:
        ticker = threading.Thread(target=self._tick, daemon=True, name="bmc-ticker")
        ticker.start()
        self._threads.append(ticker)
        for srv in self.servers:
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True,
                                 name=f"bmc-{srv.service.node.name}")
            t.start()
            self._threads.append(t)
        log.info("serving %d BMCs", len(self.servers))
        return self

    def stop(self) -> None:
        self.stopping.set()
        # shutdown() blocks until that listener's next poll; do them all at once, not in turn
        stoppers = [threading.Thread(target=srv.shutdown, daemon=True) for srv in self.servers]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join(timeout=5)
        for srv in self.servers:
            srv.server_close()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def request_count(self) -> int:
        return sum(s.requests for s in self.servers)
