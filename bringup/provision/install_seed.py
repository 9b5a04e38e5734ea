"""A node's NoCloud install seed: the autoinstall ``user-data`` and ``meta-data`` that let
Ubuntu's installer (subiquity) run unattended, with the node's own host key in it.

The document is :func:`bringup.provision.image.autoinstall_user_data` for the node's image plus, in
its ``user-data`` section (cloud-init of the installed system), the host key bringup made
for the node (``ssh_keys``; cloud-init's ``ssh_deletekeys`` and an empty
``ssh_genkeytypes`` leave it the node's only host key). Every seed is checked against
subiquity's published autoinstall JSON schema (``bringup/data/autoinstall-schema.json``,
from canonical/subiquity; see tests/fixtures/autoinstall/SOURCES.md) and against what
bringup itself needs of it (:data:`REQUIRED`) before it is written, and again by whoever
reads one (:func:`parse_seed`, the lab's simulated installer); a problem names its path.

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
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.errors import ConfigError
from bringup.provision.hostkeys import HostKey, public_of
from bringup.provision.image import ImageManifest, autoinstall_user_data
from bringup.resources import data_file
from bringup.remote.ssh import parse_public_key

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


def _get(doc: Any, path: tuple[str, ...]) -> Any:
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
                 if _get(doc, path) in (None, "", [], {})]
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


# --- reading a seed (the simulated installer; tests) ----------------------------------------
class SshKeys(BaseModel):
    model_config = ConfigDict(extra="allow")
    ed25519_private: str
    ed25519_public: str


class WriteFile(BaseModel):
    model_config = ConfigDict(extra="allow")
    path: str
    content: str = ""


class CloudConfig(BaseModel):
    model_config = ConfigDict(extra="allow")
    hostname: str
    ssh_keys: SshKeys
    write_files: list[WriteFile] = Field(min_length=1)


class Preference(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    package: str
    pin: str = Field(pattern=r"^version \S+$")
    priority: int = Field(alias="pin-priority", ge=1000)


class Seed(BaseModel):
    """What a seed says the node will be."""

    hostname: str
    image: str
    kernel: str
    #: Debian package -> the exact version apt is pinned to
    pins: dict[str, str]
    host_public: str
    host_private: str = Field(repr=False)
    authorized_keys: list[str]


def parse_seed(text: str, source: str = "user-data") -> Seed:
    """Read a seed's ``user-data`` as an installer would: YAML, schema, then the parts we use.
    Raises :class:`SeedInvalid` naming each problem's path (the node stays at the installer)."""
    if not text.startswith("#cloud-config"):
        raise SeedInvalid(f"{source}: does not start with '#cloud-config'; cloud-init ignores it")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise SeedInvalid(f"{source}:{where} is not YAML: {getattr(exc, 'problem', exc)}") from None
    problems = validate(doc)
    if problems:
        raise SeedInvalid(f"{source} is invalid:\n  " + "\n  ".join(problems))
    ai = doc["autoinstall"]
    try:
        cc = CloudConfig.model_validate(ai["user-data"])
        prefs = [Preference.model_validate(p) for p in ai["apt"]["preferences"]]
    except ValidationError as exc:
        e = exc.errors()[0]
        raise SeedInvalid(f"{source}: autoinstall.user-data.{_path(e['loc'])}: {e['msg']}") from None
    record = next((f for f in cc.write_files if f.path == IMAGE_RECORD), None)
    image = (yaml.safe_load(record.content) or {}).get("image") if record else None
    if not isinstance(image, str) or not image:
        raise SeedInvalid(f"{source}: autoinstall.user-data.write_files: no {IMAGE_RECORD} naming the image")
    if public_of(cc.ssh_keys.ed25519_private).split()[:2] != cc.ssh_keys.ed25519_public.split()[:2]:
        raise SeedInvalid(f"{source}: autoinstall.user-data.ssh_keys: the public key is not the private key's")
    return Seed(hostname=cc.hostname, image=image, kernel=str(_get(ai, ("kernel", "package")) or ""),
                pins={p.package: p.pin.split(" ", 1)[1] for p in prefs},
                host_public=cc.ssh_keys.ed25519_public, host_private=cc.ssh_keys.ed25519_private,
                authorized_keys=list(_get(ai, ("ssh", "authorized-keys")) or []))
