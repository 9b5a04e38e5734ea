"""The guard of tests/unit really refuses processes and sockets."""

import socket
import subprocess

import pytest
from conftest import RealResourceUsed


def test_a_process_is_refused():
    with pytest.raises(RealResourceUsed, match="start a process"):
        subprocess.run(["true"], check=False)


def test_a_connection_is_refused():
    with pytest.raises(RealResourceUsed, match="connect"):
        socket.create_connection(("127.0.0.1", 9))
    with socket.socket() as s, pytest.raises(RealResourceUsed):
        s.connect(("127.0.0.1", 9))
