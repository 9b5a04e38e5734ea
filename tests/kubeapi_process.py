"""The lab's Kubernetes API stand-in as a real process on loopback, for the integration
tests that need one (tests/integration/kube, workload, admission): started, waited for
until it answers TLS, stopped."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class KubeApiProcess:
    def __init__(self, home: Path, port: int, fleet: Path | None = None) -> None:
        self.home, self.port, self.fleet = home, port, fleet
        self.proc: subprocess.Popen | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kube" / "kubeconfig"

    def start(self) -> None:
        self.log = open(self.home / "kubeapi.log", "ab")  # noqa: SIM115 - closed in stop()
        fleet = ["--fleet", str(self.fleet)] if self.fleet else []
        self.proc = subprocess.Popen([sys.executable, "-m", "lab.kubeapi", "serve", "--home", str(self.home),
                                      "--listen", f"127.0.0.1:{self.port}", *fleet], cwd=REPO, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kubeapi exited: {(self.home / 'kubeapi.log').read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as raw, \
                        ctx.wrap_socket(raw):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("kubeapi did not answer within 20s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
