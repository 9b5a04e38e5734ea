"""A node's NoCloud install seed: the autoinstall ``user-data`` and ``meta-data`` that let
Ubuntu's installer (subiquity) run unattended, with the node's own host key in it.

The document is :func:`bringup.provision.image.autoinstall_user_data` for the node's image plus, in
its ``user-data`` section (cloud-init of the installed system), the host key bringup made
for the node (``ssh_keys``; cloud-init's ``ssh_deletekeys`` and an empty
``ssh_genkeytypes`` leave it the node's only host key). Every seed is checked against
subiquity's published autoinstall JSON schema (``bringup/data/autoinstall-schema.json``,
from canonical/subiquity; see tests/fixtures/autoinstall/SOURCES.md) and against what
bringup itself needs of it (:data:`REQUIRED`) before it is written; a problem names its
path. :func:`validate` is public for whoever reads a seed back (an installer's stand-in
checks a seed it is given the same way).

The private key is a secret: :func:`redact` is the only form of a seed that may reach
evidence, logs or the journal.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from typing import Any

import yaml

from bringup.errors import ConfigError
from bringup.provision.hostkeys import HostKey
from bringup.provision.image import ImageManifest, autoinstall_user_data
from bringup.remote.ssh import parse_public_key
from bringup.resources import data_file

#: where the image record lives on an installed node (read back by the install step)
IMAGE_RECORD = "/etc/bringup/image.yaml"
#: NoCloud reads a file system with this volume label (cloud-init's NoCloud datasource)
VOLUME_ID = "cidata"
REDACTED = "<redacted: private host key of the node>"

#: what bringup needs of a seed beyond subiquity's schema: path -> why
REQUIRED: dict[tuple[str, ...], str] = {
    ("autoinstall", "version"): "subiquity refuses a document without it",
    ("autoinstall", "ssh", "install-server"): "without sshd the node never answers",
    ("autoinstall", "apt", "preferences"): "the exact versions of the image's packages",
    ("autoinstall", "late-commands"): "installs and holds the image's packages",
    ("autoinstall", "user-data", "ssh_keys", "ed25519_private"): "the host key bringup pinned",
    ("autoinstall", "user-data", "ssh_keys", "ed25519_public"): "the host key bringup pinned",
    ("autoinstall", "user-data", "write_files"): f"{IMAGE_RECORD}, what the node says it runs",
}


class SeedInvalid(ConfigError):
    """A seed that subiquity (or bringup) would not take: the install cannot run unattended."""


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(data_file("autoinstall-schema.json").read_text())


def _path(parts: Any) -> str:
    return ".".join(str(p) for p in parts) or "(top)"


def dig(doc: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in nested mappings, or None where a part is missing."""
    for part in path:
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


def validate(doc: Any) -> list[str]:
    """Every problem of a seed document (``{"autoinstall": {...}}``), each naming its path."""
    if not isinstance(doc, dict) or not isinstance(doc.get("autoinstall"), dict):
        return ["autoinstall: missing; the document is not an autoinstall seed (a mapping under 'autoinstall')"]
    from jsonschema import Draft7Validator
    problems = [f"autoinstall.{_path(e.absolute_path)}: {e.message}" if e.absolute_path
                else f"autoinstall: {e.message}"
                for e in sorted(Draft7Validator(schema()).iter_errors(doc["autoinstall"]), key=lambda e: list(e.path))]
    problems += [f"{_path(path)}: missing ({why})" for path, why in REQUIRED.items()
                 if dig(doc, path) in (None, "", [], {})]
    return problems


def seed_document(m: ImageManifest, *, hostname: str, host_key: HostKey,
                  authorized_keys: list[str] | None = None) -> dict[str, Any]:
    """The node's autoinstall document as data, with its host key."""
    doc = autoinstall_user_data(m, hostname=hostname, authorized_keys=authorized_keys)
    doc["autoinstall"]["user-data"].update({
        "ssh_deletekeys": True,           # no key of the install media survives
        "ssh_genkeytypes": [],            # and none is generated beside ours
        "ssh_keys": {"ed25519_private": host_key.private, "ed25519_public": host_key.public},
    })
    return doc


def render(m: ImageManifest, *, hostname: str, host_key: HostKey,
           authorized_keys: list[str] | None = None) -> dict[str, str]:
    """File name -> text of the node's seed (``user-data``, ``meta-data``), validated.

    The instance id carries the host key's fingerprint: cloud-init runs its per-instance
    modules (host keys, write_files) again only for a new instance id, i.e. a new seed."""
    doc = seed_document(m, hostname=hostname, host_key=host_key, authorized_keys=authorized_keys)
    problems = validate(doc)
    if problems:
        raise SeedInvalid(f"the seed of {hostname} is invalid:\n  " + "\n  ".join(problems),
                          hint="fix the renderer or the image manifest; nothing was written")
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=200)
    header = (f"#cloud-config\n# NoCloud seed of {hostname}: image {m.name}, rendered by bringup;\n"
              f"# ISO {m.iso.url} sha256 {m.iso.sha256}\n")
    _, blob = parse_public_key(host_key.public)
    # hex, not the fingerprint's base64: cloud-init makes a folder of the instance id ("/")
    tag = hashlib.sha256(blob).hexdigest()[:12]
    meta = yaml.safe_dump({"instance-id": f"{hostname}-{tag}", "local-hostname": hostname}, sort_keys=False)
    return {"user-data": header + body, "meta-data": meta}


_PRIVATE = re.compile(r"-----BEGIN OPENSSH PRIVATE KEY-----.*?-----END OPENSSH PRIVATE KEY-----\n?", re.DOTALL)


def redact(text: str) -> str:
    """The seed's text without its private key, for evidence and notes."""
    out = _PRIVATE.sub(REDACTED, text)
    # the YAML dump may fold the key into one quoted scalar: catch its body too
    return re.sub(r"(ed25519_private:\s*).*?(\n\s{0,8}ed25519_public:)", rf"\1'{REDACTED}'\2", out, flags=re.DOTALL)
