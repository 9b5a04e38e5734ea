"""The NetBox session over a real socket, against servers that misbehave the way a busy
NetBox does:

- one that drops connections the way gunicorn closes an idle keep-alive one under a
  request: a GET is sent again and answered, a POST is not sent twice and fails with a
  connection error;
- one that answers one request at a time, 0.3 s each (a NetBox whose workers are all busy):
  sent all at once, the later requests wait in the server's queue against the read timeout
  and fail; bounded (``netbox_max_inflight``), they wait their turn in the client and every
  one is answered."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import requests

from bringup.netbox.adapter import connect

pytestmark = pytest.mark.integration

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"count\":0}"
SERVE_S = 0.3
READ_TIMEOUT_S = 2.0
REQUESTS = 12


def read_head(conn: socket.socket) -> bytes:
    """One request's head, or b"" when the client closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    return data


class RawServer:
    """Accepts connections into a deep backlog and hands each, one after another, to ``handle``."""

    def __init__(self, handle):
        self.handle = handle
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
                try:
                    self.handle(conn)
                except OSError:
                    pass   # the client gave up on it

    def close(self):
        self.sock.close()


class Dropper(RawServer):
    """Reads each request of a keep-alive connection; closes the first ``drops`` without answering."""

    def __init__(self, drops: int):
        self.drops, self.seen = drops, []
        super().__init__(self._keep_alive)

    def _keep_alive(self, conn):
        while data := read_head(conn):
            self.seen.append(data.split(b" ", 1)[0].decode())
            if self.drops > 0:
                self.drops -= 1
                return  # closed with no answer
            conn.sendall(ANSWER)


def one_at_a_time(conn):
    if read_head(conn):
        time.sleep(SERVE_S)
        conn.sendall(ANSWER.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1))


@pytest.fixture
def servers():
    made = []

    def make(server):
        made.append(server)
        return server

    yield make
    for s in made:
        s.close()


def test_a_read_on_a_dropped_connection_is_answered_on_the_next(servers):
    server = servers(Dropper(drops=2))
    api = connect(server.url, "nbt_x.y", timeout=5)
    answer = api.http_session.get(f"{server.url}/api/dcim/devices/?name=n1")
    assert answer.json() == {"count": 0}
    assert server.seen == ["GET", "GET", "GET"]


def test_a_write_on_a_dropped_connection_is_not_sent_twice(servers):
    server = servers(Dropper(drops=1))
    api = connect(server.url, "nbt_x.y", timeout=5)
    with pytest.raises(requests.ConnectionError):
        api.http_session.post(f"{server.url}/api/extras/journal-entries/", json={"comments": "once"})
    assert server.seen == ["POST"]


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


def test_sent_all_at_once_the_last_in_the_servers_queue_time_out(servers):
    # requests past the 6th wait at least 7 x 0.3 s in the server's queue: over the 2 s read timeout
    failed = _all_at_once(servers(RawServer(one_at_a_time)), inflight=REQUESTS)
    assert failed and set(failed) <= {"ReadTimeout", "ConnectionError"}


def test_bounded_every_request_is_answered(servers):
    assert _all_at_once(servers(RawServer(one_at_a_time)), inflight=2) == []
