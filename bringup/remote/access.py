"""How bringup logs in to nodes (:class:`SshAccess`, :class:`Target`) and the one host-key
policy, in the two forms the SSH clients we use understand.

The policy: a node must present the host key pinned for its address in *our* known_hosts
(the install step writes it from NetBox's ``ssh_host_key``, see
:mod:`bringup.provision.hostkeys`). A key that is not pinned, or another key, is refused
and never learnt; the user's and the system's known_hosts, an agent and ``~/.ssh`` keys
are never consulted. :mod:`bringup.remote.ssh` (paramiko) applies it to every command
bringup runs on a node; :func:`openssh_options` is the same policy for the OpenSSH that
Ansible uses from the controller and OpenMPI uses from the node launching a fabric test.

Also here: the key-text helpers (fingerprints, known_hosts names and lookups) and the
check of our own private key file before anything uses it.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from bringup.errors import ConfigError, SecretFileError
from bringup.localfiles import check_secret_file

#: seconds to wait for a node's TCP answer, banner, key exchange and login
CONNECT_TIMEOUT = 10.0


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


def load_private_key(path: str | Path) -> paramiko.PKey:
    """Our SSH private key, refused unless only its owner can read it and it holds an
    unencrypted private key. OpenSSH silently ignores a key others can read (mode 0644)
    and every node would then look unreachable, and be blamed for it: the controller's
    mistake must stop the run here, as a :class:`SecretFileError` (a controller fault)."""
    p = check_secret_file(path, "SSH private key", missing_hint="check ssh_key_file in the controller's settings")
    try:
        return paramiko.PKey.from_path(p)
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


def check_private_key(path: str | Path) -> Path:
    """``path``, once :func:`load_private_key` accepted the key in it."""
    load_private_key(path)
    return Path(path)


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


def openssh_options(key_file: str | Path, known_hosts: str | Path, *, port: int | None = None, user: str = "",
                    connect_timeout: float = CONNECT_TIMEOUT) -> list[str]:
    """The host-key policy (and our key only, unattended) as OpenSSH client arguments."""
    opts = ["-i", str(key_file), "-o", "IdentitiesOnly=yes",
            "-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes",  # pinned: an unknown or changed key is refused, never added
            "-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, round(connect_timeout))}"]
    if port is not None and port != 22:
        opts += ["-p", str(port)]
    if user:
        opts += ["-l", user]
    return opts


@dataclass(frozen=True)
class Target:
    """One node as the controller reaches it over SSH."""

    name: str
    address: str
    port: int = 22

    def __str__(self) -> str:
        return f"node {self.name} ({self.address}:{self.port})" if self.name else f"{self.address}:{self.port}"


@dataclass(frozen=True)
class SshAccess:
    """How we log in to nodes: user, private key file, the known_hosts we trust, the
    nodes' SSH port and how long a connection may take to be made."""

    user: str
    key_file: Path
    known_hosts: Path
    port: int = 22
    connect_timeout: float = CONNECT_TIMEOUT

    @classmethod
    def from_settings(cls, settings: Any) -> SshAccess:
        if not settings.ssh_key_file or not settings.ssh_known_hosts:
            raise ConfigError("settings lack ssh_key_file or ssh_known_hosts",
                              hint="name the SSH private key and the known_hosts with the nodes' host keys")
        # a key OpenSSH would ignore is our mistake, not the nodes'
        return cls(settings.ssh_user, check_private_key(settings.ssh_key_file), Path(settings.ssh_known_hosts),
                   port=int(settings.ssh_port))

    def target(self, name: str, address: str) -> Target:
        return Target(name, address, self.port)

    def openssh_options(self) -> list[str]:
        """This access as OpenSSH arguments (the port and user are given per host)."""
        return openssh_options(self.key_file, self.known_hosts, connect_timeout=self.connect_timeout)
