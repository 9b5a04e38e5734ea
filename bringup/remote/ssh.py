"""SSH adapter (paramiko): wait for a freshly installed node, trusting only the host key
we expect; and the check of our own private key file before anything uses it.

Host keys are pinned: the key a node must present comes from our own known_hosts file
(written when the site generated the node's host keys), never from the node itself, and
is never auto-added. A node that presents another key is refused at once with both
fingerprints: retrying would only invite a man in the middle.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import time
from pathlib import Path

import paramiko

from bringup.errors import ConfigError, HostKeyMismatch, SecretFileError, SSHError
from bringup.localfiles import check_secret_file


def fingerprint(key_blob: bytes) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key blob (as ssh-keygen -l prints)."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(key_blob).digest()).decode().rstrip("=")


def parse_public_key(text: str) -> tuple[str, bytes]:
    """``ssh-ed25519 AAAA... [comment]`` -> (key type, blob)."""
    parts = text.split()
    if len(parts) < 2:
        raise ConfigError(f"{text[:40]!r} is not an OpenSSH public key (type base64 [comment])")
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except ValueError:
        raise ConfigError(f"the public key of type {parts[0]} is not valid base64") from None
    return parts[0], blob


def check_private_key(path: str | Path) -> Path:
    """Our SSH private key file, refused unless only its owner can read it and it holds an
    unencrypted private key. OpenSSH silently ignores a key others can read (mode 0644)
    and every node would then look unreachable, and be blamed for it: the controller's
    mistake must stop the run here, as a :class:`SecretFileError` (a controller fault)."""
    p = check_secret_file(path, "SSH private key", missing_hint="check ssh_key_file in the controller's settings")
    try:
        paramiko.PKey.from_path(p)
    # paramiko says "encrypted" with its own exception for PEM keys; for OpenSSH-format
    # keys the TypeError of cryptography's loader comes through
    except (paramiko.PasswordRequiredException, TypeError) as exc:
        if isinstance(exc, TypeError) and "password" not in str(exc).lower():
            raise
        raise SecretFileError(f"the SSH private key {p} is encrypted; runs are unattended (BatchMode)",
                              hint="use a key without a passphrase, readable only by the controller") from None
    except (OSError, ValueError, paramiko.SSHException) as exc:
        raise SecretFileError(f"{p} is not an SSH private key we can use: {exc}",
                              hint="check ssh_key_file in the controller's settings") from None
    return p


def known_hosts_name(address: str, port: int) -> str:
    return address if port == 22 else f"[{address}]:{port}"


def expected_host_key(known_hosts: Path, address: str, port: int) -> str:
    """The key our known_hosts file expects for ``address:port`` (``type base64``).

    Hashed entries (``|1|...``) are matched too, as OpenSSH writes them with
    HashKnownHosts."""
    name = known_hosts_name(address, port)
    try:
        hk = paramiko.HostKeys(str(known_hosts))
    except OSError as exc:
        raise ConfigError(f"cannot read known_hosts {known_hosts}: {exc.strerror}",
                          hint="set ssh_known_hosts in the settings to the site's file") from None
    keys = hk.lookup(name)
    if not keys:
        raise ConfigError(f"{known_hosts} has no host key for {name}",
                          hint="add the node's pre-generated host key before installing it")
    key_type = min(keys.keys())
    return f"{key_type} {keys[key_type].get_base64()}"


def _probe(address: str, port: int, key_type: str, timeout: float) -> bytes:
    """One SSH key exchange; returns the host key blob the server proved it holds."""
    sock = socket.create_connection((address, port), timeout=timeout)
    transport = paramiko.Transport(sock)
    try:
        # ask for the type we pinned, so a server with several keys shows the right one
        transport.get_security_options().key_types = [key_type]
        transport.start_client(timeout=timeout)
        return transport.get_remote_server_key().asbytes()
    finally:
        transport.close()


def wait_for_ssh(address: str, port: int, expected_host_key: str, timeout: float, *,
                 node: str = "", interval: float = 1.0, connect_timeout: float = 5.0) -> str:
    """Wait until ``address:port`` answers SSH with ``expected_host_key``; return its fingerprint.

    Raises :class:`SSHError` at once on a host key mismatch (both fingerprints named), and
    "node never came back" once ``timeout`` seconds pass without an SSH answer."""
    key_type, want = parse_public_key(expected_host_key)
    who = f"node {node} ({address}:{port})" if node else f"{address}:{port}"
    deadline = time.monotonic() + timeout
    last = "no attempt"
    while True:
        try:
            seen = _probe(address, port, key_type, min(connect_timeout, max(timeout, 0.1)))
        except (OSError, paramiko.SSHException, EOFError) as exc:
            last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        else:
            if seen == want:
                return fingerprint(seen)
            raise HostKeyMismatch(f"{who} presented host key {fingerprint(seen)} but we expect "
                                  f"{fingerprint(want)} ({key_type}); refusing to connect",
                                  hint="if the node was legitimately re-keyed, update the expected key in "
                                       "known_hosts; otherwise treat it as an intruder")
        if time.monotonic() + interval > deadline:
            break
        time.sleep(interval)
    raise SSHError(f"{who} never came back: no SSH answer within {timeout:.0f}s after the install "
                   f"(last error: {last})",
                   hint="check the node's console through its BMC; it may have failed to boot the new OS")
