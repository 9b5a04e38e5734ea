"""The seed as a disk image: a small ISO 9660 file system labelled ``cidata`` holding
``user-data`` and ``meta-data``, which cloud-init's NoCloud datasource (and so subiquity)
finds on any attached medium. Built and read with Debian's ``xorriso``; this module is
the only one that runs it.

Seed images hold the node's private host key: they are written 0600 into a folder only
the controller may read (and the web server the BMCs fetch them from), and removed once
the node answered with its key (:func:`remove`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from bringup.errors import ConfigError
from bringup.provision.install_seed import VOLUME_ID


def xorriso() -> str:
    found = shutil.which("xorriso")
    if not found:
        raise ConfigError("xorriso is not installed; it builds the nodes' install seeds",
                          hint="apt-get install -y xorriso")
    return found


def _run(argv: list[str], what: str, timeout: float = 60.0) -> str:
    try:
        proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"xorriso took over {timeout:.0f}s to {what}") from None
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise ConfigError(f"xorriso could not {what}: {tail}")
    return proc.stdout + proc.stderr


def build(files: dict[str, str], out: Path) -> Path:
    """Write ``files`` (name -> text) as the ISO ``out`` (volume ``cidata``), replaced atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".seed-") as tmp:
        src = Path(tmp) / "files"
        src.mkdir(mode=0o700)
        for name, text in files.items():
            fd = os.open(src / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
        iso = Path(tmp) / "seed.iso"
        # Joliet and Rock Ridge keep the names exactly "user-data" / "meta-data"
        _run([xorriso(), "-as", "mkisofs", "-quiet", "-volid", VOLUME_ID, "-joliet", "-rock",
              "-output", str(iso), str(src)], f"build the seed {out.name}")
        iso.chmod(0o600)
        os.replace(iso, out)
    return out


def volume_id(iso: Path) -> str:
    """The ISO's volume label, as ``xorriso -pvd_info`` reads it."""
    text = _run([xorriso(), "-indev", str(iso), "-pvd_info"], f"read {iso.name}")
    for line in text.splitlines():
        if line.startswith("Volume Id"):
            return line.split(":", 1)[1].strip()
    return ""


def extract(iso: Path, dest: Path) -> dict[str, str]:
    """The files at the root of the ISO (name -> text)."""
    dest.mkdir(parents=True, exist_ok=True)
    _run([xorriso(), "-osirrox", "on", "-indev", str(iso), "-extract", "/", str(dest)], f"read {iso.name}")
    out = {}
    for p in sorted(dest.iterdir()):
        if p.is_file():
            p.chmod(0o600)  # xorriso restores the ISO's read-only modes
            out[p.name] = p.read_text(errors="replace")
    return out


def remove(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
