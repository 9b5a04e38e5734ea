"""The NetBox session's bound on requests in flight, over a real socket to a server that
answers one request at a time, 0.3 s each (a NetBox whose workers are all busy): sent all
at once, the later requests wait in the server's queue against the read timeout and fail;
bounded, they wait their turn in the client and every one is answered."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import requests

from bringup.netbox.adapter import connect

pytestmark = pytest.mark.integration

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
SERVE_S = 0.3
READ_TIMEOUT_S = 2.0
REQUESTS = 12


class OneAtATime:
    """Accepts connections into a deep backlog; answers them one after another."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                time.sleep(SERVE_S)
                try:
                    conn.sendall(ANSWER)
                except OSError:
                    pass   # the client gave up on it

    def close(self):
        self.sock.close()


@pytest.fixture
def server():
    s = OneAtATime()
    yield s
    s.close()


def _all_at_once(server, inflight: int) -> list[str]:
    api = connect(server.url, "nbt_x.y", timeout=(5, READ_TIMEOUT_S), retries=0, inflight=inflight)
    failed: list[str] = []

    def one(i):
        try:
            api.http_session.request("GET", f"{server.url}/api/dcim/devices/{i}/").raise_for_status()
        except requests.RequestException as exc:
            failed.append(type(exc).__name__)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(REQUESTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failed


def test_sent_all_at_once_the_last_in_the_servers_queue_time_out(server):
    # requests past the 6th wait at least 7 x 0.3 s in the server's queue: over the 2 s read timeout
    failed = _all_at_once(server, inflight=REQUESTS)
    assert failed and set(failed) <= {"ReadTimeout", "ConnectionError"}


def test_bounded_every_request_is_answered(server):
    assert _all_at_once(server, inflight=2) == []
