"""OS image manifests: what a node's operating system and NVIDIA stack must be, exactly.

A manifest (``images/<name>.yaml``) pins the OS release and kernel, the installer ISO
(URL + sha256), the versions the node must report (``packages``) and every Debian
package installed for them with its exact apt version (``apt.pins``). The same manifest
drives three things:

* :func:`render_autoinstall` builds the Ubuntu autoinstall ``user-data`` / ``meta-data``
  that installs and holds exactly those packages;
* the ``pin.yml`` playbook checks the installed versions against it (:func:`pin_vars`);
* the burn-in judge compares the versions the agent reports with it.

Pure logic only: loading reads a file, rendering returns text; nothing touches a node.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bringup.errors import ConfigError
from bringup.resources import data_dir
from bringup.yamlio import LocatedYaml, load_file, validation_error

IMAGES_DIR = data_dir("images")

# Version shapes as the vendors publish them. Kept strict on purpose: a typo such as
# "570.133" or "2.26.2+cuda12.8" must be caught here, not after an hour of installing.
DRIVER_RE = re.compile(r"^\d{3}\.\d{2,3}(\.\d{2,3})?$")              # 570.133.20
CUDA_RE = re.compile(r"^\d{2}\.\d$")                                  # 12.8
NCCL_RE = re.compile(r"^\d+\.\d+\.\d+-\d+\+cuda(\d{2}\.\d)$")         # 2.26.2-1+cuda12.8
DCGM_RE = re.compile(r"^\d+\.\d+\.\d+-\d+$")                          # 4.2.3-1
SEMVER_RE = re.compile(r"^\d+\.\d+\.\d+$")                            # 2.14.1
KERNEL_RE = re.compile(r"^\d+\.\d+\.\d+-\d+-[a-z0-9]+$")              # 6.8.0-60-generic
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
# Debian policy 5.6.12: [epoch:]upstream[-revision]; upstream starts with a digit
DEB_VERSION_RE = re.compile(r"^(\d+:)?\d[A-Za-z0-9.+~]*(-[A-Za-z0-9.+~]+)?$")
DEB_PACKAGE_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
COMPONENTS = ("driver", "cuda", "nccl", "dcgm", "nccl_tests")


def _check(pattern: re.Pattern[str], example: str, v: str) -> str:
    if not pattern.match(v):
        raise ValueError(f"{v!r} is not a version like {example}")
    return v


class OsSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    distribution: str = Field(pattern=r"^(ubuntu)$")
    release: str = Field(pattern=r"^\d{2}\.\d{2}$")
    kernel: str

    @field_validator("kernel")
    @classmethod
    def _kernel(cls, v: str) -> str:
        return _check(KERNEL_RE, "6.8.0-60-generic", v)

    @property
    def kernel_package(self) -> str:
        return f"linux-image-{self.kernel}"


class IsoSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(pattern=r"^https?://\S+\.iso$")
    sha256: str

    @field_validator("sha256")
    @classmethod
    def _sha(cls, v: str) -> str:
        if not SHA256_RE.match(v):
            raise ValueError(f"{v!r} is not a sha256 (64 lower-case hex digits, as sha256sum prints)")
        return v


class Versions(BaseModel):
    """What the node must report; compared exactly by pin.yml and by the burn-in judge."""

    model_config = ConfigDict(extra="forbid")
    driver: str
    cuda: str
    nccl: str
    dcgm: str
    nccl_tests: str

    @field_validator("*", mode="before")
    @classmethod
    def _not_a_number(cls, v: object) -> object:
        # YAML reads 12.10 as the float 12.1: a version must be quoted to stay exact
        if isinstance(v, int | float) and not isinstance(v, bool):
            raise ValueError(  # noqa: TRY004 - pydantic turns only ValueError into a validation error
                f"{v!r} was read as a number; write versions in quotes, e.g. \"{v}\"")
        return v

    @field_validator("driver")
    @classmethod
    def _driver(cls, v: str) -> str:
        return _check(DRIVER_RE, "570.133.20", v)

    @field_validator("cuda")
    @classmethod
    def _cuda(cls, v: str) -> str:
        return _check(CUDA_RE, "12.8", v)

    @field_validator("nccl")
    @classmethod
    def _nccl(cls, v: str) -> str:
        return _check(NCCL_RE, "2.26.2-1+cuda12.8", v)

    @field_validator("dcgm")
    @classmethod
    def _dcgm(cls, v: str) -> str:
        return _check(DCGM_RE, "4.2.3-1", v)

    @field_validator("nccl_tests")
    @classmethod
    def _tests(cls, v: str) -> str:
        return _check(SEMVER_RE, "2.14.1", v)

    @model_validator(mode="after")
    def _nccl_matches_cuda(self) -> Versions:
        m = NCCL_RE.match(self.nccl)
        if m and m.group(1) != self.cuda:
            raise ValueError(f"nccl {self.nccl} is built for CUDA {m.group(1)} but cuda is {self.cuda}")
        return self

    @property
    def nccl_upstream(self) -> str:
        """2.26.2 for 2.26.2-1+cuda12.8: what ncclGetVersion reports on the node."""
        return self.nccl.split("-", 1)[0]


class AptSource(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str = Field(pattern=r"^deb ")
    keyid: str = Field(pattern=r"^[0-9A-F]{40}$")


class AptPin(BaseModel):
    model_config = ConfigDict(extra="forbid")
    component: str
    version: str

    @field_validator("component")
    @classmethod
    def _component(cls, v: str) -> str:
        if v not in COMPONENTS:
            raise ValueError(f"{v!r} is not one of {', '.join(COMPONENTS)}")
        return v

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not DEB_VERSION_RE.match(v):
            raise ValueError(f"{v!r} is not a Debian version like 1:4.2.3-1 or 570.133.20-0ubuntu0.24.04.1")
        return v

    @property
    def version_no_epoch(self) -> str:
        return self.version.split(":", 1)[1] if ":" in self.version else self.version


class AptSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sources: dict[str, AptSource] = Field(default_factory=dict)
    pins: dict[str, AptPin] = Field(min_length=1)

    @field_validator("pins")
    @classmethod
    def _names(cls, v: dict[str, AptPin]) -> dict[str, AptPin]:
        for name in v:
            if not DEB_PACKAGE_RE.match(name):
                raise ValueError(f"{name!r} is not a Debian package name")
        return v


class NcclTestsSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repo: str = Field(pattern=r"^https://\S+$")
    tag: str = Field(pattern=r"^v\d+\.\d+\.\d+$")
    prefix: str = Field(default="/opt/nccl-tests", pattern=r"^/\S+$")


class ImageManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    os: OsSpec
    iso: IsoSpec
    packages: Versions
    apt: AptSpec
    nccl_tests: NcclTestsSpec
    #: container images that go with this OS image, by role (``training``: the production
    #: image the pool acceptance job runs, bringup.workload)
    containers: dict[str, str] = Field(default_factory=dict)

    def pins_of(self, component: str) -> dict[str, str]:
        """Debian package -> exact apt version, for one component (driver, nccl...)."""
        return {p: pin.version for p, pin in self.apt.pins.items() if pin.component == component}


def _cross_checks(m: ImageManifest, doc: LocatedYaml) -> list[str]:
    """Each apt pin must carry the version its component declares in ``packages``."""
    problems = []
    for name, pin in m.apt.pins.items():
        want = getattr(m.packages, pin.component)
        got = pin.version_no_epoch
        if not (got == want or got.startswith((want + "-", want + "."))):
            problems.append(f"  {doc.where(('apt', 'pins', name, 'version'))} apt.pins.{name}.version: "
                            f"{pin.version} does not carry {pin.component} {want} from packages.{pin.component}")
    tag = m.nccl_tests.tag.lstrip("v")
    if tag != m.packages.nccl_tests:
        problems.append(f"  {doc.where(('nccl_tests', 'tag'))} nccl_tests.tag: {m.nccl_tests.tag} is not "
                        f"packages.nccl_tests {m.packages.nccl_tests}")
    for comp in ("driver", "cuda", "nccl", "dcgm"):
        if not m.pins_of(comp):
            problems.append(f"  {doc.where(('apt', 'pins'))} apt.pins: no package carries {comp}; "
                            f"add the Debian package(s) that install it")
    return problems


def parse_manifest(doc: LocatedYaml) -> ImageManifest:
    if not isinstance(doc.data, dict):
        raise ConfigError(f"{doc.source}: an image manifest is a mapping with name, os, iso, packages, apt",
                          hint="see images/ubuntu-2404-cuda128.yaml")
    try:
        manifest = ImageManifest.model_validate(doc.data)
    except ValidationError as exc:
        raise validation_error(exc, doc, "image manifest") from None
    problems = _cross_checks(manifest, doc)
    if problems:
        raise ConfigError(f"image manifest {doc.source} is invalid:\n" + "\n".join(problems),
                          hint="fix the fields listed above")
    return manifest


def manifest_path(name_or_path: str | Path, images_dir: Path = IMAGES_DIR) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.parent != Path("."):
        return p
    return images_dir / f"{name_or_path}.yaml"


def load_manifest(name_or_path: str | Path, images_dir: Path = IMAGES_DIR) -> ImageManifest:
    """Load ``images/<name>.yaml`` (or a path) and validate it; errors name file:line and field."""
    path = manifest_path(name_or_path, images_dir)
    if not path.exists():
        known = ", ".join(sorted(q.stem for q in images_dir.glob("*.yaml"))) or "none"
        raise ConfigError(f"no image manifest {path}", hint=f"known images: {known}")
    return parse_manifest(load_file(path))


def list_manifests(images_dir: Path = IMAGES_DIR) -> list[ImageManifest]:
    return [load_manifest(p) for p in sorted(images_dir.glob("*.yaml"))]


def manifest_for_url(url: str, images_dir: Path = IMAGES_DIR) -> ImageManifest:
    """The manifest whose ISO is served at ``url`` (what a BMC boots from)."""
    for m in list_manifests(images_dir):
        if m.iso.url == url:
            return m
    raise ConfigError(f"no image manifest under {images_dir} has iso.url {url}",
                      hint="insert the ISO URL of a manifest (bringup image render NAME shows it)")


# --- build recipe ----------------------------------------------------------------------
def pin_vars(m: ImageManifest) -> dict[str, Any]:
    """Extra vars for playbooks/pin.yml: the exact versions the node must have."""
    return {
        "image_name": m.name,
        "expected_driver": m.packages.driver,
        "expected_nccl_tests": m.packages.nccl_tests,
        "nccl_tests_prefix": m.nccl_tests.prefix,
        # package -> {component, version}: checked with dpkg-query one by one
        "expected_packages": {p: {"component": pin.component, "version": pin.version}
                              for p, pin in m.apt.pins.items()},
    }


def _preferences(m: ImageManifest) -> list[dict[str, Any]]:
    # Pin-Priority >= 1000 makes apt keep (or go back to) exactly this version
    return [{"package": p, "pin": f"version {pin.version}", "pin-priority": 1001}
            for p, pin in sorted(m.apt.pins.items())]


def autoinstall_user_data(m: ImageManifest, *, hostname: str = "ubuntu",
                          authorized_keys: list[str] | None = None) -> dict[str, Any]:
    """The autoinstall document as data (rendered with yaml.safe_dump, never a template)."""
    installs = [f"{p}={pin.version}" for p, pin in sorted(m.apt.pins.items())]
    held = sorted(m.apt.pins)
    cuda_home = f"/usr/local/cuda-{m.packages.cuda}"
    t = m.nccl_tests
    late = [
        ["curtin", "in-target", "--", "apt-get", "update"],
        ["curtin", "in-target", "--", "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y",
         "--no-install-recommends", "--allow-downgrades", f"{m.os.kernel_package}", *installs],
        # held as well as pinned: `apt upgrade` and unattended-upgrades skip held packages
        ["curtin", "in-target", "--", "apt-mark", "hold", m.os.kernel_package, *held],
        ["curtin", "in-target", "--", "git", "clone", "--depth", "1", "--branch", t.tag, t.repo, t.prefix],
        ["curtin", "in-target", "--", "make", "-C", t.prefix, "-j", "MPI=0", f"CUDA_HOME={cuda_home}"],
        ["curtin", "in-target", "--", "sh", "-c", f"echo {m.packages.nccl_tests} > {t.prefix}/VERSION"],
        ["curtin", "in-target", "--", "systemctl", "enable", "nvidia-fabricmanager"],
    ]
    # what the node says it runs, read back over SSH by the install step (never a NetBox field)
    record = yaml.safe_dump({"image": m.name, "kernel": m.os.kernel, "versions": m.packages.model_dump()},
                            sort_keys=False)
    autoinstall: dict[str, Any] = {
        "version": 1,
        "locale": "en_US.UTF-8",
        "keyboard": {"layout": "us"},
        "refresh-installer": {"update": False},
        "source": {"id": "ubuntu-server-minimal"},
        "storage": {"layout": {"name": "lvm"}},
        "ssh": {"install-server": True, "allow-pw": False, "authorized-keys": list(authorized_keys or [])},
        "kernel": {"package": m.os.kernel_package},
        "apt": {
            "sources": {f"{name}.list": {"source": s.source, "keyid": s.keyid}
                        for name, s in sorted(m.apt.sources.items())},
            "preferences": _preferences(m),
        },
        # build tools for nccl-tests; what the burn-in agent runs beside the NVIDIA stack
        "packages": ["git", "build-essential", "python3", "python3-pynvml", "stress-ng", "fio", "perftest",
                     "infiniband-diags"],
        "late-commands": late,
        # cloud-init of the installed system: the hostname; never a password
        "user-data": {"hostname": hostname, "disable_root": False,
                      "write_files": [{"path": "/etc/bringup/image.yaml", "permissions": "0644",
                                       "content": record}]},
        "shutdown": "reboot",
    }
    return {"autoinstall": autoinstall}


def render_autoinstall(m: ImageManifest, *, hostname: str = "ubuntu",
                       authorized_keys: list[str] | None = None) -> dict[str, str]:
    """File name -> text for the NoCloud seed: ``user-data`` and ``meta-data``."""
    doc = autoinstall_user_data(m, hostname=hostname, authorized_keys=authorized_keys)
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=200)
    header = (f"#cloud-config\n# rendered by `bringup image render {m.name}` from images/{m.name}.yaml;\n"
              f"# ISO {m.iso.url} sha256 {m.iso.sha256}\n")
    meta = yaml.safe_dump({"instance-id": f"{m.name}-{hostname}", "local-hostname": hostname}, sort_keys=False)
    return {"user-data": header + body, "meta-data": meta}


def write_render(m: ImageManifest, out_dir: Path, **kw: Any) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_autoinstall(m, **kw).items():
        path = out_dir / name
        path.write_text(text)
        written.append(path)
    return written
