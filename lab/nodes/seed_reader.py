"""The simulated installer's reading of a node's NoCloud seed: what subiquity and
cloud-init would take from ``user-data``, checked as they would check it.

bringup only writes seeds (:mod:`bringup.provision.install_seed`: render, validate,
redact); reading one back is the node's side, so it lives with the node stand-ins. The
checks are the library's own (:func:`~bringup.provision.install_seed.validate`:
subiquity's published schema and what bringup needs of a seed), so a seed the lab takes
is one the renderer vouched for; a problem is a
:class:`~bringup.provision.install_seed.SeedInvalid` naming its path, and the node stays
at the installer.
"""

from __future__ import annotations

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.provision.hostkeys import public_of
from bringup.provision.install_seed import IMAGE_RECORD, SeedInvalid, dig, validate


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
        where = ".".join(str(p) for p in e["loc"]) or "(top)"
        raise SeedInvalid(f"{source}: autoinstall.user-data.{where}: {e['msg']}") from None
    record = next((f for f in cc.write_files if f.path == IMAGE_RECORD), None)
    image = (yaml.safe_load(record.content) or {}).get("image") if record else None
    if not isinstance(image, str) or not image:
        raise SeedInvalid(f"{source}: autoinstall.user-data.write_files: no {IMAGE_RECORD} naming the image")
    if public_of(cc.ssh_keys.ed25519_private).split()[:2] != cc.ssh_keys.ed25519_public.split()[:2]:
        raise SeedInvalid(f"{source}: autoinstall.user-data.ssh_keys: the public key is not the private key's")
    return Seed(hostname=cc.hostname, image=image, kernel=str(dig(ai, ("kernel", "package")) or ""),
                pins={p.package: p.pin.split(" ", 1)[1] for p in prefs},
                host_public=cc.ssh_keys.ed25519_public, host_private=cc.ssh_keys.ed25519_private,
                authorized_keys=list(dig(ai, ("ssh", "authorized-keys")) or []))
