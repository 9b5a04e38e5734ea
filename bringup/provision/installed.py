"""What OS image a node runs, as the node itself says: its ``/etc/bringup/image.yaml``
(written by the install seed's cloud-init), read through the SSH seam
(:mod:`bringup.remote.ssh`), its host key checked against the one pinned in known_hosts.

The install step decides "already installed" from this, never from a NetBox field: a
field written when the node was seeded says what we meant to install, not what is there.
A node that presents another host key is refused (:class:`HostKeyMismatch`), one that
refuses our key is ours to fix (:class:`NodeRefusedOurKey`); one that does not answer,
or has no record, is simply "not known to be installed".
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from bringup.errors import SSHDropped, SSHError, SSHUnreachable
from bringup.provision.install_seed import IMAGE_RECORD
from bringup.remote.ssh import NodeRefusedOurKey, Ssh, Target

__all__ = ["IMAGE_RECORD", "InstalledImage", "NodeRefusedOurKey", "parse_record", "read_installed"]

# the lab's nodes keep their file system under $BRINGUP_SYSROOT (as the playbooks read it)
_READ = f'cat "${{BRINGUP_SYSROOT:-}}{IMAGE_RECORD}"'


class InstalledImage(BaseModel):
    model_config = ConfigDict(extra="allow")
    image: str
    kernel: str = ""
    versions: dict[str, str] = {}


def read_installed(ssh: Ssh, target: Target, *, timeout: float = 5.0) -> InstalledImage | None:
    """The node's image record, or None when the node does not answer or has none.

    Raises :class:`HostKeyMismatch` when it answers with another host key than the pinned
    one, :class:`NodeRefusedOurKey` when it refuses our key."""
    try:
        out = ssh.run(target, _READ, timeout=timeout)
    except (SSHUnreachable, SSHDropped):
        return None
    if not out.ok or not out.stdout.strip():
        return None
    return parse_record(out.stdout, f"{target.name or target.address}:{IMAGE_RECORD}")


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
