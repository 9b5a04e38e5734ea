"""Unit tests touch nothing real: no process, no socket.

Every test under tests/unit runs with process creation and network connections
replaced by a function that fails the test with a clear message (as
ironic-python-agent's unit tests forbid ``execute``). A test that needs ``openssl``,
``ssh-keygen``, a server or the agent as a process belongs in tests/integration.
"""

from __future__ import annotations

import os
import socket
import subprocess

import pytest


class RealResourceUsed(AssertionError):
    pass


def _forbid(what: str):
    def refuse(*args, **kwargs):
        # Popen._execute_child(self, args, ...): show the command, not the Popen object
        shown = repr(args[1] if args and isinstance(args[0], subprocess.Popen) else args[0] if args else "")[:120]
        raise RealResourceUsed(f"a unit test tried to {what} {shown}: unit tests touch no process or socket; "
                               "use a fake, or move the test to tests/integration")
    return refuse


@pytest.fixture(autouse=True)
def no_processes_or_sockets(monkeypatch):
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _forbid("start a process"))
    for name in ("system", "popen", "execv", "execve", "execvp", "execvpe", "fork", "forkpty", "posix_spawn",
                 "posix_spawnp", "spawnv", "spawnve", "spawnvp", "spawnvpe"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _forbid(f"call os.{name}"))
    monkeypatch.setattr(socket.socket, "connect", _forbid("connect a socket to"))
    monkeypatch.setattr(socket.socket, "connect_ex", _forbid("connect a socket to"))
    monkeypatch.setattr(socket.socket, "bind", _forbid("bind a socket to"))
    monkeypatch.setattr(socket, "create_connection", _forbid("open a connection to"))
    monkeypatch.setattr(socket, "getaddrinfo", _forbid("resolve"))
    yield
