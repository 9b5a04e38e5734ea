"""The one SSH seam (paramiko): every command bringup runs on a node from the controller
goes through :meth:`Ssh.run` (the fabric test's one long-running half, a perftest server,
through :meth:`Ssh.start`, of which ``run`` is ``start`` then ``wait``), and so does the
wait for a freshly installed node (:func:`wait_for_ssh`).

Host keys follow the one policy of :mod:`bringup.remote.access`: the key a node presents
must be the one pinned for its address in our known_hosts. Nothing else is loaded (not
the user's or the system's known_hosts, no agent, no ``~/.ssh`` key), nothing is learnt.

SSH trouble is translated into :mod:`bringup.errors` classes here, in :func:`_translate`,
and nowhere else:

- no answer (refused, timed out, reset, no banner or key exchange) -> :class:`SSHUnreachable`
  (transient: the node may still be booting);
- another key than the pinned one -> :class:`HostKeyMismatch` (never retried: retrying
  only invites a man in the middle);
- no key pinned for the address -> :class:`HostKeyNotPinned` (a :class:`ConfigError`);
- our key refused -> :class:`NodeRefusedOurKey` (an :class:`AuthError`: ours to fix);
- our key file unusable -> :class:`SecretFileError`;
- the session lost while the command ran -> :class:`SSHDropped` (its result is unknown).

A command that ran and failed is a value (:attr:`Completed.rc`), never an exception,
unless the caller asks with ``check=True``.
"""

from __future__ import annotations

import select
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import paramiko

from bringup.errors import (
    AuthError,
    BringupError,
    ConfigError,
    HostKeyMismatch,
    SecretFileError,
    SSHDropped,
    SSHError,
    SSHUnreachable,
)
from bringup.remote.access import (
    SshAccess,
    Target,
    check_private_key,
    expected_host_key,
    fingerprint,
    load_private_key,
    parse_public_key,
)
from bringup.retry import Backoff, Timeout, poll

# the key helpers lived here before bringup.remote.access: older callers still import them here
__all__ = ["Completed", "HostKeyNotPinned", "NodeRefusedOurKey", "RemoteCommandFailed", "Running", "Ssh",
           "SshAccess", "Target", "check_private_key", "expected_host_key", "fingerprint", "parse_public_key",
           "wait_for_ssh"]

Command = Sequence[str] | str
_CHUNK = 1 << 16
#: longest pause between two looks at a running command (output wakes the wait at once)
_LOOK = 1.0


class HostKeyNotPinned(SSHError, ConfigError):
    """Our known_hosts has no key for the node's address: we never learn one from the node."""


class NodeRefusedOurKey(SSHError, AuthError):
    """The node proved its pinned host key but refused our client key: our side to fix,
    never a reason to reinstall or blame it."""


class RemoteCommandFailed(SSHError):
    """``check=True`` and the command exited non-zero or did not finish in time."""


@dataclass
class Completed:
    """How a command on a node ended: ``rc`` None when it did not finish (``timed_out``),
    -1 when it ended without an exit status (killed by a signal)."""

    command: list[str] | str
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    host: str = ""
    #: fingerprint of the host key the node proved
    host_key: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out


class _Unpinned(Exception):
    def __init__(self, name: str, key: paramiko.PKey) -> None:
        super().__init__(name)
        self.name, self.key = name, key


class _RefuseUnpinned(paramiko.MissingHostKeyPolicy):
    """The policy for an address without a pinned key: refuse, and learn nothing."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        raise _Unpinned(hostname, key)


def _translate(exc: BaseException, t: Target, access: SshAccess) -> BringupError:
    """The one map from what paramiko and the socket raise to bringup's error classes."""
    if isinstance(exc, BringupError):
        return exc
    if isinstance(exc, _Unpinned):
        return HostKeyNotPinned(
            f"{t} presented host key {fingerprint(exc.key.asbytes())} but {access.known_hosts} pins no key for "
            f"{exc.name}; refusing to connect",
            hint="the install step pins each node's key from NetBox's ssh_host_key: run it for the node (or "
                 "write that key into known_hosts); a key is never accepted on first use")
    if isinstance(exc, paramiko.BadHostKeyException):
        return HostKeyMismatch(
            f"{t} presented host key {fingerprint(exc.key.asbytes())} but we expect "
            f"{fingerprint(exc.expected_key.asbytes())} ({exc.expected_key.get_name()}); refusing to connect",
            hint="if the node was legitimately reinstalled, pin its new key (NetBox's ssh_host_key, written "
                 "into known_hosts by the install step); otherwise treat it as an intruder")
    if isinstance(exc, paramiko.PasswordRequiredException):
        return SecretFileError(f"the SSH private key {access.key_file} is encrypted; runs are unattended",
                               hint="use a key without a passphrase, readable only by the controller")
    if isinstance(exc, paramiko.AuthenticationException):
        return NodeRefusedOurKey(
            f"{t} answered with its pinned host key but refused our SSH key {access.key_file} "
            f"(user {access.user}); it is not blamed or reinstalled for that",
            hint="check ssh_key_file and ssh_user in the settings, and the node's authorized_keys")
    if isinstance(exc, paramiko.IncompatiblePeer):
        return SSHError(f"{t} and we share no SSH algorithm ({exc})",
                        hint="the node's sshd must offer the pinned host key's type (ssh-ed25519)")
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return SSHUnreachable(f"{t} did not answer SSH: {detail}",
                          hint="the node may still be booting; check it through its BMC if this lasts")


def _command_line(command: Command) -> str:
    return command if isinstance(command, str) else shlex.join(command)


def _select_wait(chan: paramiko.Channel, seconds: float) -> None:
    """Up to ``seconds``, ending early when the channel has output, an exit status or closes."""
    if chan.eof_received:
        # the output is over, and the channel stays "readable" until it closes: a select
        # would return at once every time; the exit status (or the close) is what comes next
        chan.status_event.wait(seconds)
    else:
        select.select([chan], [], [], seconds)


class Ssh:
    """The adapter. ``client`` makes the paramiko client, ``wait`` waits on a channel,
    ``sleep`` and ``clock`` pace waits: parameters so unit tests run with fakes."""

    def __init__(self, access: SshAccess, *, client: Callable[[], paramiko.SSHClient] = paramiko.SSHClient,
                 wait: Callable[[paramiko.Channel, float], None] = _select_wait,
                 sleep: Callable[[float], None] | None = None, clock: Callable[[], float] | None = None) -> None:
        self.access = access
        self._client, self._wait = client, wait
        # looked up at each call by default: tests move time.sleep / time.monotonic
        self.sleep = sleep or (lambda s: time.sleep(s))
        self.clock = clock or (lambda: time.monotonic())

    def run(self, target: Target, command: Command, *, timeout: float, input: str | bytes | None = None,
            check: bool = False) -> Completed:
        """Run ``command`` (an argv list, quoted for the node's shell, or a shell line) on
        ``target``; ``timeout`` bounds the whole call, connecting included. ``input`` is
        the command's stdin (else it reads end of file). A command still running at the
        deadline is left (its session closed) and comes back ``timed_out``."""
        t0 = self.clock()
        proc = self.start(target, command, input=input,
                          connect_timeout=max(0.1, min(self.access.connect_timeout, timeout)))
        try:
            return proc.wait(max(0.0, timeout - (self.clock() - t0)), check=check)
        finally:
            proc.kill()

    def start(self, target: Target, command: Command, *, input: str | bytes | None = None,
              connect_timeout: float | None = None) -> Running:
        """Start ``command`` on ``target`` and return at once; see :class:`Running`."""
        t0 = self.clock()
        client = self._connect(target, connect_timeout or self.access.connect_timeout)
        try:
            transport = client.get_transport()
            if transport is None:  # connect() returned without a transport: nothing to run on
                raise paramiko.SSHException("no transport after connecting")
            host_key = fingerprint(transport.get_remote_server_key().asbytes())
            chan = transport.open_session(timeout=self.access.connect_timeout)
            chan.exec_command(_command_line(command))
            if input is not None:
                chan.sendall(input.encode() if isinstance(input, str) else input)
            chan.shutdown_write()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            client.close()
            raise _translate(exc, target, self.access) from None
        return Running(self, target, command, client, chan, t0, host_key)

    def _connect(self, t: Target, timeout: float) -> paramiko.SSHClient:
        pkey = load_private_key(self.access.key_file)
        client = self._client()
        try:
            client.get_host_keys().load(str(self.access.known_hosts))
        except OSError as exc:
            raise ConfigError(f"cannot read known_hosts {self.access.known_hosts}: {exc.strerror}",
                              hint="check ssh_known_hosts in the settings; the install step writes the "
                                   "nodes' pinned keys there") from None
        client.set_missing_host_key_policy(_RefuseUnpinned())
        try:
            client.connect(t.address, port=t.port, username=self.access.user, pkey=pkey, timeout=timeout,
                           banner_timeout=timeout, auth_timeout=timeout, channel_timeout=timeout,
                           look_for_keys=False, allow_agent=False)
            transport = client.get_transport()
            if transport is not None:
                transport.set_keepalive(5)  # a long test's idle session is not cut by a NAT or firewall
        except (_Unpinned, paramiko.SSHException, OSError, EOFError) as exc:
            client.close()
            raise _translate(exc, t, self.access) from None
        return client


class Running:
    """A command started on a node: :meth:`poll` whether it ended, :meth:`wait` for its
    :class:`Completed`, :meth:`kill` to close its session (as killing an ``ssh`` would)."""

    def __init__(self, ssh: Ssh, target: Target, command: Command, client: paramiko.SSHClient,
                 chan: paramiko.Channel, t0: float, host_key: str) -> None:
        self._ssh, self.target, self.command = ssh, target, command
        self._client, self._chan, self._t0, self._host_key = client, chan, t0, host_key
        self._out, self._err = bytearray(), bytearray()
        self._result: Completed | None = None

    def _pump(self) -> bool:
        """Take what arrived (so the node is never blocked on a full window); True once
        the command ended. Its exit status follows all its output on the channel."""
        ch = self._chan
        while ch.recv_ready():
            self._out += ch.recv(_CHUNK)
        while ch.recv_stderr_ready():
            self._err += ch.recv_stderr(_CHUNK)
        return ch.exit_status_ready()

    def _completed(self, rc: int | None, timed_out: bool = False) -> Completed:
        self._result = Completed(
            list(self.command) if not isinstance(self.command, str) else self.command, rc,
            self._out.decode(errors="replace"), self._err.decode(errors="replace"), self._ssh.clock() - self._t0,
            timed_out=timed_out, host=self.target.name, host_key=self._host_key)
        return self._result

    def _finish(self) -> Completed:
        self._pump()
        rc = self._chan.recv_exit_status()  # at once: the command ended
        if rc == -1:  # no exit status: the session ended under the command, or a signal did
            transport = self._chan.get_transport()
            if transport is None or not transport.is_active():
                self._close()
                raise SSHDropped(f"the SSH session to {self.target} dropped while "
                                 f"{_command_line(self.command)[:80]!r} ran; its result is unknown",
                                 hint="check the node: it may have rebooted or lost its network")
        self._close()
        return self._completed(rc)

    def poll(self) -> int | None:
        """The exit status once the command ended, else None (never blocks)."""
        if self._result is None and self._pump():
            self._finish()
        return None if self._result is None else self._result.rc

    def wait(self, timeout: float, *, check: bool = False) -> Completed:
        """Wait up to ``timeout`` seconds for the command to end. One still running then
        is killed and comes back ``timed_out``; with ``check``, anything but exit 0 raises
        :class:`RemoteCommandFailed`."""
        if self._result is None:
            try:
                poll(self._pump, timeout=timeout, what=f"{_command_line(self.command)[:60]} on {self.target}",
                     done=bool, backoff=Backoff(first=_LOOK, factor=1.0, cap=_LOOK),
                     sleep=lambda s: self._ssh._wait(self._chan, s), clock=self._ssh.clock)
                self._finish()
            except Timeout:
                self._close()
                self._completed(None, timed_out=True)
        res = self._result
        if res is None:  # _finish() or the timeout above always set it
            raise RuntimeError("a finished command without a result")
        if check and not res.ok:
            how = f"did not finish within {timeout:.0f}s" if res.timed_out else f"exited {res.rc}"
            tail = res.stderr.strip().splitlines()[-1:] or ["no error output"]
            raise RemoteCommandFailed(f"{_command_line(self.command)[:80]!r} on {self.target} {how}: {tail[0]}")
        return res

    def kill(self) -> None:
        """Close the session (the node's command loses its stdout and stderr); no-op once ended."""
        if self._result is None:
            self._pump()
            self._close()
            self._completed(None, timed_out=True)

    def _close(self) -> None:
        self._chan.close()
        self._client.close()


def wait_for_ssh(ssh: Ssh, target: Target, timeout: float, *, interval: float = 1.0) -> str:
    """Wait until ``target`` answers SSH with its pinned host key and lets us log in;
    return the fingerprint of its key.

    A node presenting another key (or one not pinned, or refusing our key) is refused at
    once; one that does not answer within ``timeout`` seconds "never came back"."""
    end = ssh.clock() + timeout

    def attempt() -> Completed:
        left = max(0.1, min(ssh.access.connect_timeout, end - ssh.clock()))
        return ssh.run(target, ["true"], timeout=left)

    try:
        done = poll(attempt, timeout=timeout, what=f"SSH of {target}", done=lambda c: c is not None and c.ok,
                    on_error=(SSHUnreachable, SSHDropped), backoff=Backoff(first=interval, factor=1.0, cap=interval),
                    sleep=ssh.sleep, clock=ssh.clock)
    except Timeout as exc:
        last = exc.last
        why = (f"{type(last).__name__}: {last}" if isinstance(last, BaseException)
               else f"`true` exited {last.rc}" if isinstance(last, Completed) else "no attempt")
        raise SSHError(f"{target} never came back: no SSH answer within {timeout:.0f}s after the install "
                       f"(last error: {why})",
                       hint="check the node's console through its BMC; it may have failed to boot the new OS") from None
    return done.host_key
