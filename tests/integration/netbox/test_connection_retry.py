"""The NetBox session over a real socket whose server drops connections the way gunicorn
closes an idle keep-alive one under a request: a GET is sent again and answered, a POST
is not sent twice and fails with a connection error."""

from __future__ import annotations

import socket
import threading

import pytest
import requests

from bringup.netbox.adapter import connect

pytestmark = pytest.mark.integration

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"count\":0}"


class Dropper:
    """An HTTP server that reads each request and closes the first ``drops`` without answering."""

    def __init__(self, drops: int):
        self.drops, self.seen = drops, []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                while True:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    if not data:
                        break
                    self.seen.append(data.split(b" ", 1)[0].decode())
                    if self.drops > 0:
                        self.drops -= 1
                        break  # closed with no answer
                    conn.sendall(ANSWER)

    def close(self):
        self.sock.close()


@pytest.fixture
def dropper():
    servers = []

    def make(drops):
        servers.append(Dropper(drops))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_a_read_on_a_dropped_connection_is_answered_on_the_next(dropper):
    server = dropper(drops=2)
    api = connect(server.url, "nbt_x.y", timeout=5)
    answer = api.http_session.get(f"{server.url}/api/dcim/devices/?name=n1")
    assert answer.json() == {"count": 0}
    assert server.seen == ["GET", "GET", "GET"]


def test_a_write_on_a_dropped_connection_is_not_sent_twice(dropper):
    server = dropper(drops=1)
    api = connect(server.url, "nbt_x.y", timeout=5)
    with pytest.raises(requests.ConnectionError):
        api.http_session.post(f"{server.url}/api/extras/journal-entries/", json={"comments": "once"})
    assert server.seen == ["POST"]
