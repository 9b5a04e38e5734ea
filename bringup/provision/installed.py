"""What OS image a node runs, as the node itself says: its ``/etc/bringup/image.yaml``
(written by the install seed's cloud-init), read over SSH with the pinned host key.

The install step decides "already installed" from this, never from a NetBox field: a
field written when the node was seeded says what we meant to install, not what is there.
A node that presents another host key is refused (:class:`HostKeyMismatch`); one that
does not answer, or has no record, is simply "not known to be installed".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import paramiko
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from bringup.errors import AuthError, HostKeyMismatch, SSHError
from bringup.provision.install_seed import IMAGE_RECORD
from bringup.remote.ssh import fingerprint, parse_public_key

# the lab's nodes keep their file system under $BRINGUP_SYSROOT (as the playbooks read it)
_READ = f'cat "${{BRINGUP_SYSROOT:-}}{IMAGE_RECORD}"'


class InstalledImage(BaseModel):
    model_config = ConfigDict(extra="allow")
    image: str
    kernel: str = ""
    versions: dict[str, str] = {}


class NodeRefusedOurKey(SSHError, AuthError):
    """The node proved the pinned host key but refused our client key: our side to fix,
    never a reason to reinstall it."""


class _Pinned(paramiko.MissingHostKeyPolicy):
    """Accept the server only if it proves the pinned key; never learn a key."""

    def __init__(self, key_type: str, blob: bytes) -> None:
        self.key_type, self.blob = key_type, blob

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        if key.asbytes() != self.blob:
            raise HostKeyMismatch(f"{hostname} presented host key {fingerprint(key.asbytes())} but we expect "
                                  f"{fingerprint(self.blob)} ({self.key_type}); refusing to connect",
                                  hint="a reinstall gives the node a new pinned key; otherwise treat it as "
                                       "an intruder")


def read_installed(address: str, port: int, user: str, key_file: Path, host_key: str, *,
                   node: str = "", timeout: float = 5.0) -> InstalledImage | None:
    """The node's image record, or None when the node does not answer or has none.

    Raises :class:`HostKeyMismatch` when it answers with another host key."""
    key_type, blob = parse_public_key(host_key)
    who = node or f"{address}:{port}"
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(_Pinned(key_type, blob))
    try:
        client.connect(address, port=port, username=user, key_filename=str(key_file), timeout=timeout,
                       banner_timeout=timeout, auth_timeout=timeout, look_for_keys=False, allow_agent=False)
        _, out, _ = client.exec_command(_READ, timeout=timeout)
        text = out.read().decode(errors="replace")
        status = out.channel.recv_exit_status()
    except HostKeyMismatch as exc:
        raise HostKeyMismatch(f"node {who}: {exc.args[0]}", hint=getattr(exc, "hint", "")) from None
    except paramiko.AuthenticationException:
        raise NodeRefusedOurKey(f"node {who} answered with its pinned host key but refused our SSH key "
                                f"{key_file}; it is not reinstalled for that",
                                hint="check ssh_key_file and ssh_user in the settings") from None
    except (TimeoutError, OSError, paramiko.SSHException, EOFError):
        return None
    finally:
        client.close()
    if status != 0 or not text.strip():
        return None
    return parse_record(text, f"{who}:{IMAGE_RECORD}")


def parse_record(text: str, source: str) -> InstalledImage:
    try:
        data: Any = yaml.safe_load(text)
        return InstalledImage.model_validate(data)
    except yaml.YAMLError as exc:
        raise SSHError(f"{source} is not YAML: {exc}", hint="reinstall the node") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        raise SSHError(f"{source}: {'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}",
                       hint="reinstall the node") from None
