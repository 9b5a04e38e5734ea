"""A paramiko client without a network, for the SSH seam's unit tests.

:class:`FakeClient` is a real :class:`paramiko.SSHClient` (its host-key store, its policy
hook) whose ``connect`` checks the server's key the way paramiko's does, against what the
seam loaded, then hands out a scripted :class:`FakeChannel` instead of opening a socket.
Time is a :class:`Clock` the seam's waits advance."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from bringup.provision import hostkeys
from bringup.remote.access import SshAccess, known_hosts_name
from bringup.remote.ssh import Ssh


def ed25519() -> tuple[paramiko.PKey, hostkeys.HostKey]:
    k = hostkeys.generate("test")
    return paramiko.Ed25519Key.from_private_key(io.StringIO(k.private)), k


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class FakeChannel:
    """A command on the node: its output arrives at once; it ends after ``ticks`` waits,
    with ``end``: "exit" (``rc``), "drop" (the connection lost), "signal" (no status), or
    "never"."""

    stdout: bytes = b""
    stderr: bytes = b""
    rc: int = 0
    end: str = "exit"
    ticks: int = 0
    command: str | None = None
    sent: bytes = b""
    write_shut: bool = False
    closed: bool = False
    transport: FakeTransport | None = None
    _out: bytearray = field(default_factory=bytearray)
    _err: bytearray = field(default_factory=bytearray)

    def exec_command(self, command: str) -> None:
        self.command = command
        self._out += self.stdout
        self._err += self.stderr

    def sendall(self, data: bytes) -> None:
        self.sent += data

    def shutdown_write(self) -> None:
        self.write_shut = True

    def tick(self) -> None:
        self.ticks -= 1

    def _ended(self) -> bool:
        return self.closed or (self.end != "never" and self.ticks <= 0)

    def recv_ready(self) -> bool:
        return bool(self._out)

    def recv(self, n: int) -> bytes:
        data, self._out[:] = bytes(self._out[:n]), self._out[n:]
        return data

    def recv_stderr_ready(self) -> bool:
        return bool(self._err)

    def recv_stderr(self, n: int) -> bytes:
        data, self._err[:] = bytes(self._err[:n]), self._err[n:]
        return data

    def exit_status_ready(self) -> bool:
        if self._ended() and self.end == "drop" and self.transport:
            self.transport.active = False
        return self._ended()

    def recv_exit_status(self) -> int:
        assert self._ended(), "the seam must not block on a running command"
        return self.rc if self.end == "exit" and not self.closed else -1

    def get_transport(self) -> FakeTransport | None:
        return self.transport

    def close(self) -> None:
        self.closed = True


@dataclass
class FakeTransport:
    server_key: paramiko.PKey
    channel: FakeChannel
    active: bool = True
    keepalive: int = 0

    def get_remote_server_key(self) -> paramiko.PKey:
        return self.server_key

    def open_session(self, timeout: float | None = None) -> FakeChannel:
        self.channel.transport = self
        return self.channel

    def set_keepalive(self, seconds: int) -> None:
        self.keepalive = seconds

    def is_active(self) -> bool:
        return self.active


class FakeClient(paramiko.SSHClient):
    """Made by the seam through the ``client`` factory of :class:`Node`."""

    def __init__(self, node: Node) -> None:
        super().__init__()
        self.node = node
        self.kwargs: dict = {}
        self.was_closed = False
        node.clients.append(self)

    def connect(self, hostname, port=22, **kwargs) -> None:  # type: ignore[override]
        self.kwargs = {"hostname": hostname, "port": port, **kwargs}
        if self.node.fail is not None:
            raise self.node.fail
        name = known_hosts_name(hostname, port)
        ours = self.get_host_keys().lookup(name)  # what the seam loaded from known_hosts, only that
        key = self.node.server_key
        if ours is None:
            self._policy.missing_host_key(self, name, key)
        elif ours.get(key.get_name()) != key:
            raise paramiko.BadHostKeyException(hostname, key, next(iter(ours.values())))
        self._transport = FakeTransport(key, self.node.channel())  # type: ignore[assignment]

    def close(self) -> None:
        self.was_closed = True


class Node:
    """One fake node: its host key, how connecting to it fails (``fail``), and the
    channels its commands get (``channels``, in order; a plain exit 0 when none left)."""

    def __init__(self, server_key: paramiko.PKey, *, fail: BaseException | None = None) -> None:
        self.server_key, self.fail = server_key, fail
        self.channels: list[FakeChannel] = []
        self.clients: list[FakeClient] = []

    def channel(self) -> FakeChannel:
        return self.channels.pop(0) if self.channels else FakeChannel()

    def client(self) -> FakeClient:
        return FakeClient(self)


def client_key(tmp: Path) -> Path:
    p = tmp / "id_ed25519"
    p.write_text(hostkeys.generate("controller").private)
    p.chmod(0o600)
    return p


def seam(tmp: Path, node: Node, *, pinned: str | None, port: int = 2222) -> tuple[Ssh, Clock]:
    """The seam over ``node``, with ``pinned`` (``type base64``) as the only known_hosts
    entry for 127.0.0.5:``port`` (None: an empty known_hosts)."""
    kh = tmp / "known_hosts"
    kh.write_text(f"{known_hosts_name('127.0.0.5', port)} {pinned}\n" if pinned else "")
    clock = Clock()

    def wait(chan: FakeChannel, seconds: float) -> None:
        clock.sleep(seconds)
        chan.tick()

    access = SshAccess("bringup", client_key(tmp), kh, port=port)
    return Ssh(access, client=node.client, wait=wait, sleep=clock.sleep, clock=clock), clock
