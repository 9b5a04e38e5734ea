"""Nodes' SSH host keys, made by bringup before the node's first boot, and pinned.

bringup generates each node's ed25519 host key when it builds the node's install seed:
the private half goes only into the seed (cloud-init writes it as the node's sshd host
key), the public half into NetBox (the device's ``ssh_host_key`` field) and into the
controller's known_hosts, so the node's first SSH answer is checked against a key we
made, never one we learn from the node. A new key means a new seed, i.e. a reinstall.

The private half lives in a :class:`HostKey` only while the seed is built; its ``repr``
never shows it, so a key object that reaches a log or a traceback leaks nothing.
"""

from __future__ import annotations

import fcntl
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bringup.errors import ConfigError
from bringup.remote.access import known_hosts_name, parse_public_key

#: the NetBox device custom field holding a node's pinned public host key
FIELD = "ssh_host_key"
KEY_TYPE = "ssh-ed25519"


@dataclass(frozen=True)
class HostKey:
    """One node's host key pair. ``public`` is ``ssh-ed25519 AAAA... comment``."""

    public: str
    private: str = field(repr=False)

    @property
    def pinned(self) -> str:
        """``type base64`` without the comment: what NetBox and known_hosts keep."""
        return pinned_form(self.public)


def generate(comment: str) -> HostKey:
    """A fresh ed25519 host key pair, in OpenSSH's own file formats (as ssh-keygen writes)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    return HostKey(public=f"{public} {comment}".strip(), private=private)


def pinned_form(public: str) -> str:
    """``ssh-ed25519 AAAA...`` of a public key line, checked; the comment dropped."""
    key_type, _ = parse_public_key(public)
    if key_type != KEY_TYPE:
        raise ConfigError(f"host key of type {key_type} where bringup pins {KEY_TYPE} keys",
                          hint="reinstall the node: bringup generates its host key")
    return " ".join(public.split()[:2])


def public_of(private: str) -> str:
    """The public key (``ssh-ed25519 AAAA...``) of an OpenSSH private key text."""
    try:
        key = serialization.load_ssh_private_key(private.encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"not an unencrypted OpenSSH private key: {type(exc).__name__}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(f"host key is a {type(key).__name__}, not ed25519")
    return key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                         serialization.PublicFormat.OpenSSH).decode()


_lock = threading.Lock()


def pin(known_hosts: Path, address: str, port: int, public: str) -> bool:
    """Make ``known_hosts`` expect ``public`` (and only it) for ``address:port``.

    Returns True when the file changed. Steps of other nodes read and write the same file
    at once (the SSH seam, Ansible, other installs): it is replaced atomically under a lock,
    so a reader never sees it half written and two writers never drop each other's line."""
    name = known_hosts_name(address, port)
    line = f"{name} {pinned_form(public)}"
    known_hosts.parent.mkdir(parents=True, exist_ok=True)
    with _lock, open(known_hosts.with_name(known_hosts.name + ".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # writers in other processes too
        old = known_hosts.read_text() if known_hosts.exists() else ""
        kept = [ln for ln in old.splitlines() if ln.strip() and ln.split()[0] != name]
        text = "\n".join([*kept, line]) + "\n"
        if text == old:
            return False
        tmp = known_hosts.with_name(f".{known_hosts.name}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, known_hosts)
    return True
