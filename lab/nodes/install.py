"""What installing the OS from virtual media does to a simulated node.

The BMC simulator calls :func:`install_from_media` when a reset boots a node from its
virtual CD. We look up the image manifest served at that URL and write what a finished
autoinstall would leave on the node's root folder: a dpkg database holding the pinned
packages (held, as ``apt-mark hold`` leaves them), the loaded driver's
``/proc/driver/nvidia/version``, nccl-tests' VERSION and ``/etc/bringup/image.yaml``.
Faults change what gets installed (``driver_drift``, ``nccl_drift``) or whether the
node ever comes back (``never_returns``). Then the node's sshd is (re)started, with the
node's environment from the GPU stand-in profile.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from bringup.errors import ConfigError, LabError
from bringup.image import IMAGES_DIR, ImageManifest, manifest_for_url
from bringup.sku import load_skus
from lab.fleet import FaultKind, NodeSpec

from .sshd import NodeDir, host_public_key, port_open, sshd_pid, start_sshd, stop_sshd, write_known_hosts


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


def dpkg_status(m: ImageManifest, versions: dict[str, Any]) -> str:
    """A dpkg ``status`` database with the image's pinned packages, all on hold."""
    stanzas = []
    wanted = m.packages.model_dump()
    for pkg, pin in sorted(m.apt.pins.items()):
        version = _apt_version(pin.version, wanted[pin.component], str(versions[pin.component]))
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


def write_root(root: Path, m: ImageManifest, versions: dict[str, Any]) -> None:
    dpkg = root / "var/lib/dpkg"
    dpkg.mkdir(parents=True, exist_ok=True)
    (dpkg / "status").write_text(dpkg_status(m, versions))
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
    (etc / "image.yaml").write_text(f"image: {m.name}\n")
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
    return env


def install_from_media(node: NodeSpec, image_url: str, home: Path, images_dir: Path = IMAGES_DIR) -> dict:
    """Install the image served at ``image_url`` on ``node`` and boot it. Returns the
    node's state. With fault ``never_returns`` the node stays down after the install."""
    try:
        manifest = manifest_for_url(image_url, images_dir)
    except ConfigError as exc:  # an unknown ISO does not boot: the node stays as it was
        raise LabError(f"node {node.name} cannot boot {image_url}: {exc}") from None
    nd = NodeDir(home, node.name)
    nd.dir.mkdir(parents=True, exist_ok=True)
    # first say "installing", so the supervisor does not restart the old sshd meanwhile
    nd.state.write_text(json.dumps({"name": node.name, "installed": False, "boot": "installing",
                                    "image_url": image_url}))
    stop_sshd(home, node.name)  # the reset took the old OS down
    nd.root.mkdir(parents=True, exist_ok=True)
    versions = installed_versions(node, manifest)
    write_root(nd.root, manifest, versions)
    # the image ships kubeadm, as a real node image does, for the join playbook
    from lab.kubeapi import install_kubeadm
    install_kubeadm(nd.root)
    host_public_key(home, node)
    write_known_hosts(home, [node])
    nd.env_file.write_text(json.dumps(node_env(node, versions, nd.root), indent=2, sort_keys=True))
    never = node.has_fault(FaultKind.NEVER_RETURNS)
    state = {"name": node.name, "installed": not never, "image": manifest.name, "image_url": image_url,
             "versions": versions, "installed_at": time.time(),
             "boot": "hung after install" if never else "up"}
    nd.state.write_text(json.dumps(state, indent=2, sort_keys=True))
    if not never:
        start_sshd(home, node)
    return state


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
