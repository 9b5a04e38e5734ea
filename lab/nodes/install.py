"""What installing the OS from virtual media does to a simulated node.

The BMC simulator calls :func:`install_from_media` when a reset boots a node from its
virtual CD, with the URL of the second medium if one is inserted: the node's NoCloud
seed. As subiquity would, the node fetches the seed image, reads ``user-data`` from its
``cidata`` file system and checks it (:func:`lab.nodes.seed_reader.parse_seed`, subiquity's schema
and what bringup needs); without a seed, or with one it cannot use, it stays *at the
installer* (no sshd; ``state.json`` says why), as a real server would. A good seed is
applied: the packages at the versions it pins (of the image it names), the host key it
carries, the keys it authorizes, and ``/etc/bringup/image.yaml`` as it writes it. The
lab writes that into the node's root folder: a dpkg database holding the pinned packages
(held, as ``apt-mark hold`` leaves them), the loaded driver's
``/proc/driver/nvidia/version``, nccl-tests' VERSION. Faults change what gets installed
(``driver_drift``, ``nccl_drift``) or whether the node ever comes back
(``never_returns``). Then the node's sshd is (re)started, with the node's environment
from the GPU stand-in profile.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bringup.errors import ConfigError
from bringup.provision.image import IMAGES_DIR, ImageManifest, load_manifest, manifest_for_url
from bringup.provision.install_seed import IMAGE_RECORD
from bringup.sku import load_skus
from lab.errors import LabError
from lab.fleet import FaultKind, NodeSpec

from .seed_reader import Seed, parse_seed
from .seedmedia import read_seed
from .sshd import NodeDir, install_host_key, port_open, sshd_pid, start_sshd, stop_sshd

log = logging.getLogger("lab.nodes.install")


def installed_versions(node: NodeSpec, m: ImageManifest) -> dict[str, Any]:
    """Component -> version the node ends up with: the manifest's, unless a fault says
    the package repository served something else."""
    v: dict[str, Any] = {**m.packages.model_dump(), "kernel": m.os.kernel}
    for f in node.faults_of(FaultKind.DRIVER_DRIFT):
        v["driver"] = str(f.value)
    for f in node.faults_of(FaultKind.NCCL_DRIFT):
        value = str(f.value)
        # "2.21.5" means the same packaging of another upstream release
        v["nccl"] = value if "-" in value else f"{value}-1+cuda{m.packages.cuda}"
    return v


def _apt_version(pin_version: str, manifest_value: str, actual: str) -> str:
    """The apt version of a drifted package: the manifest's packaging around ``actual``."""
    if actual == manifest_value:
        return pin_version
    epoch = pin_version.split(":", 1)[0] + ":" if ":" in pin_version else ""
    bare = pin_version[len(epoch):]
    if bare == manifest_value:
        return epoch + actual
    return epoch + actual + bare[len(manifest_value):]


def dpkg_status(m: ImageManifest, versions: dict[str, Any], pins: dict[str, str] | None = None) -> str:
    """A dpkg ``status`` database with the pinned packages (the seed's, else the image's), on hold."""
    stanzas = []
    wanted = m.packages.model_dump()
    pins = pins if pins is not None else {p: pin.version for p, pin in m.apt.pins.items()}
    for pkg, pinned in sorted(pins.items()):
        pin = m.apt.pins.get(pkg)
        # a package of the image's components may drift (faults); any other is as pinned
        version = (_apt_version(pinned, wanted[pin.component], str(versions[pin.component]))
                   if pin is not None and pinned == pin.version else pinned)
        stanzas.append("\n".join([
            f"Package: {pkg}",
            "Status: hold ok installed",
            "Priority: optional",
            "Section: restricted/libs",
            "Maintainer: simulated by the bringup lab",
            "Architecture: amd64",
            f"Version: {version}",
            f"Description: {pkg} (simulated install of image {m.name})",
        ]))
    return "\n\n".join(stanzas) + "\n"


def write_root(root: Path, m: ImageManifest, versions: dict[str, Any], seed: Seed | None = None,
               record: str | None = None) -> None:
    dpkg = root / "var/lib/dpkg"
    dpkg.mkdir(parents=True, exist_ok=True)
    (dpkg / "status").write_text(dpkg_status(m, versions, seed.pins if seed else None))
    nv = root / "proc/driver/nvidia"
    nv.mkdir(parents=True, exist_ok=True)
    # the first line as the open kernel module prints it
    (nv / "version").write_text(
        f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {versions['driver']}  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Fri Mar 14 01:02:03 UTC 2025\n"
        "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n")
    tests = root / m.nccl_tests.prefix.lstrip("/")
    tests.mkdir(parents=True, exist_ok=True)
    (tests / "VERSION").write_text(f"{versions['nccl_tests']}\n")
    etc = root / "etc/bringup"
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "image.yaml").write_text(record if record is not None else f"image: {m.name}\n")
    for d in ("etc/sysctl.d", "etc/apt/preferences.d", "etc/modprobe.d", "etc/systemd/system"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "etc/modules-load.d").mkdir(parents=True, exist_ok=True)


def node_env(node: NodeSpec, versions: dict[str, Any], root: Path) -> dict[str, str]:
    """The session environment of the node: the GPU/tool stand-ins' profile plus
    ``BRINGUP_SYSROOT`` (where playbooks find the node's file system)."""
    env: dict[str, str] = {}
    try:
        from lab.gpu import write_node_profile
    except ImportError:
        write_node_profile = None  # the GPU stand-ins are another area; nodes still boot
    if write_node_profile is not None:
        sku = load_skus().get(node.sku)
        env.update(write_node_profile(node, sku, versions, root))
    env["BRINGUP_SYSROOT"] = str(root)
    # the node's Python with pynvml, as python3 is on a real node's image
    env["BURNIN_PYTHON"] = sys.executable
    env["BRINGUP_NODE"] = node.name
    # a simulated node runs as the lab host's user, whose ~/.bashrc is not the node's: bash
    # reads it for every command over SSH (Debian builds it with SSH_SOURCE_BASHRC) when it
    # is the top-level shell, and on the lab machines it ran pyenv's init, about 40
    # processes a session (process accounting: 9,164 sessions in one suite run). SHLVL=1
    # makes the session's shell a second-level one, which reads no startup file
    env["SHLVL"] = "1"
    return env


def install_from_media(node: NodeSpec, image_url: str, home: Path, seed_url: str | None = None,
                       images_dir: Path = IMAGES_DIR, current: Callable[[], bool] | None = None) -> dict:
    """Boot ``node`` from the installer at ``image_url`` with the seed at ``seed_url`` (the
    second virtual medium). Returns the node's state: installed and up; hung after the
    install (fault ``never_returns``); or at the installer (no seed, or a bad one).
    ``current()`` says whether the node was not reset since this boot: an install a reset
    cut short changes nothing more (the reset's own boot installs, or not)."""
    if (cut := _cut_short(node, current)) is not None:
        return cut
    try:
        manifest_for_url(image_url, images_dir)
    except ConfigError as exc:  # an unknown ISO does not boot: the node stays as it was
        raise LabError(f"node {node.name} cannot boot {image_url}: {exc}") from None
    if not seed_url:
        return at_installer(node, home, image_url, "no autoinstall seed: the installer waits for "
                                                   "answers at its first question")
    try:
        files = read_seed(seed_url, NodeDir(home, node.name).dir / "seed")
        seed = parse_seed(files.get("user-data", ""), f"{seed_url}!user-data")
        manifest = load_manifest(seed.image, images_dir)
    except (LabError, ConfigError) as exc:  # SeedInvalid included
        if (cut := _cut_short(node, current)) is not None:
            return cut
        return at_installer(node, home, image_url, str(exc), seed_url)
    return install_from_seed(node, seed, files["user-data"], home, image_url, manifest, current=current)


def _cut_short(node: NodeSpec, current: Callable[[], bool] | None) -> dict | None:
    """The state an install returns once a reset took its boot away (None while it has not)."""
    if current is None or current():
        return None
    return {"name": node.name, "installed": False, "boot": "reset during the installer"}


def going_down(node: NodeSpec, home: Path) -> None:
    """A reset into the installer: the running OS is gone at once (no sshd answers, and the
    node supervisor must not bring it back while the installer runs)."""
    nd = NodeDir(home, node.name)
    state = nd.read_state()
    if state.get("installed"):
        nd.state.write_text(json.dumps({**state, "installed": False, "boot": "rebooting into the installer"},
                                       indent=2, sort_keys=True))
    if stop_sshd(home, node.name):
        log.info("%s: reset into the installer: its sshd stopped", node.name)


def at_installer(node: NodeSpec, home: Path, image_url: str, reason: str, seed_url: str | None = None) -> dict:
    """The node booted the installer, which stopped: no SSH, and the state says why."""
    nd = NodeDir(home, node.name)
    nd.dir.mkdir(parents=True, exist_ok=True)
    stop_sshd(home, node.name)  # the reset took the old OS down
    state = {"name": node.name, "installed": False, "image_url": image_url, "seed_url": seed_url,
             "boot": f"at the installer: {reason}"}
    nd.state.write_text(json.dumps(state, indent=2, sort_keys=True))
    return state


def install_from_seed(node: NodeSpec, seed: Seed, user_data: str, home: Path, image_url: str,
                      manifest: ImageManifest, current: Callable[[], bool] | None = None) -> dict:
    """Apply a parsed seed to the node and boot it (what subiquity + cloud-init leave);
    ``current`` as :func:`install_from_media`'s."""
    nd = NodeDir(home, node.name)
    nd.dir.mkdir(parents=True, exist_ok=True)
    # first say "installing", so the supervisor does not restart the old sshd meanwhile
    nd.state.write_text(json.dumps({"name": node.name, "installed": False, "boot": "installing",
                                    "image_url": image_url}))
    if stop_sshd(home, node.name):
        log.info("%s: installing over a running OS: its sshd stopped", node.name)
    nd.root.mkdir(parents=True, exist_ok=True)
    versions = installed_versions(node, manifest)
    cloud = (yaml.safe_load(user_data) or {})["autoinstall"]["user-data"]
    record = next(f.get("content", "") for f in cloud["write_files"] if f.get("path") == IMAGE_RECORD)
    write_root(nd.root, manifest, versions, seed, record)
    # the image ships kubeadm, as a real node image does, for the join playbook
    from lab.kubeapi import install_kubeadm
    install_kubeadm(nd.root)
    install_host_key(home, node, seed.host_private, seed.host_public)
    (nd.dir / "authorized_keys").write_text("".join(k.strip() + "\n" for k in seed.authorized_keys))
    # faults injected while it served are its hardware's (an XID, a flapping port): a new OS
    # does not take them away
    from lab.inject import injected
    hardware = node.model_copy(update={"faults": [*node.faults, *injected(home, node.name)]})
    nd.env_file.write_text(json.dumps(node_env(hardware, versions, nd.root), indent=2, sort_keys=True))
    never = node.has_fault(FaultKind.NEVER_RETURNS)
    if (cut := _cut_short(node, current)) is not None:   # reset before the installed OS booted
        log.info("%s: the install of %s was cut short by a reset", node.name, manifest.name)
        return cut
    state = {"name": node.name, "installed": not never, "image": manifest.name, "image_url": image_url,
             "versions": versions, "installed_at": time.time(),
             "boot": "hung after install" if never else "up"}
    nd.state.write_text(json.dumps(state, indent=2, sort_keys=True))
    if not never:
        start_sshd(home, node)
    log.info("%s: installed %s (%s)", node.name, manifest.name, state["boot"])
    return state


def preinstall(node: NodeSpec, home: Path, manifest: ImageManifest) -> dict:
    """A node installed before the test or demo starts, the way bringup would install it:
    a fresh host key in its seed, pinned in the lab's known_hosts (tests without NetBox)."""
    from bringup.provision import hostkeys
    from bringup.provision import install_seed as seed
    from lab.nodes.sshd import client_key, known_hosts_path
    key = hostkeys.generate(f"root@{node.name}")
    client_pub = " ".join(Path(str(client_key(home)) + ".pub").read_text().split()[:3])
    files = seed.render(manifest, hostname=node.name, host_key=key, authorized_keys=[client_pub])
    hostkeys.pin(known_hosts_path(home), node.address, node.ssh_port, key.pinned)
    return install_from_seed(node, parse_seed(files["user-data"]), files["user-data"], home,
                             manifest.iso.url, manifest)


def node_status(home: Path, name: str) -> dict:
    """What the lab knows of one node: installed image/versions and whether sshd answers."""
    nd = NodeDir(home, name)
    state = nd.read_state()
    pid = sshd_pid(home, name)
    listening = False
    if pid:
        cfg = nd.config.read_text() if nd.config.exists() else ""
        for line in cfg.splitlines():
            if line.startswith("ListenAddress "):
                addr, port = line.split()[1].rsplit(":", 1)
                listening = port_open(addr, int(port))
    return {"name": name, "installed": bool(state.get("installed")), "image": state.get("image"),
            "versions": state.get("versions", {}), "boot": state.get("boot", "not installed"),
            "sshd_pid": pid, "listening": listening}
