"""The simulated node's side of the seed medium: fetch the image the BMC was given (as a
BMC streams a virtual medium from its URL) and read its ``cidata`` file system, as
cloud-init's NoCloud datasource does. Anything unusable is a :class:`LabError` that
says why; the node then stays at the installer."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from pathlib import Path

from bringup.errors import ConfigError
from bringup.provision import seed_iso as seediso
from bringup.provision.install_seed import VOLUME_ID
from lab.errors import LabError

#: a NoCloud seed is a few kilobytes; anything this big is not one
MAX_SEED_BYTES = 8 * 1024 * 1024


def fetch(url: str, dest: Path, timeout: float = 10.0) -> Path:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            data = resp.read(MAX_SEED_BYTES + 1)
    except (urllib.error.URLError, OSError) as exc:
        raise LabError(f"the seed medium {url} cannot be read: {getattr(exc, 'reason', exc)}") from None
    if len(data) > MAX_SEED_BYTES:
        raise LabError(f"the seed medium {url} is over {MAX_SEED_BYTES} bytes: not a NoCloud seed")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    dest.chmod(0o600)
    return dest


def read_seed(url: str, workdir: Path) -> dict[str, str]:
    """``user-data`` / ``meta-data`` of the seed image at ``url`` (workdir is emptied after)."""
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        iso = fetch(url, workdir / "seed.iso")
        try:
            label = seediso.volume_id(iso)
            if label.lower() != VOLUME_ID:
                raise LabError(f"the seed medium {url} is labelled {label!r}, not {VOLUME_ID!r}: "
                               "NoCloud does not look at it")
            files = seediso.extract(iso, workdir / "files")
        except ConfigError as exc:  # xorriso could not read it: not an ISO 9660 image
            raise LabError(f"the seed medium {url} is not a readable ISO image: {exc}") from None
        if "user-data" not in files:
            raise LabError(f"the seed medium {url} has no user-data file")
        return files
    finally:
        shutil.rmtree(workdir, ignore_errors=True)  # it held the node's private host key
