"""Compile the NVML stand-in with gcc, once per source version."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from bringup.errors import LabError

SOURCE = Path(__file__).with_name("nvml_stub.c")
LIB_NAME = "libnvidia-ml.so.1"


def build_nvml(out_dir: Path) -> Path:
    """Build ``libnvidia-ml.so.1`` under ``out_dir/<source hash>/`` and return that folder."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target_dir = Path(out_dir) / f"nvml-{digest}"
    lib = target_dir / LIB_NAME
    if lib.exists():
        return target_dir
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        raise LabError("gcc is needed to build the lab's NVML stand-in", hint="apt-get install -y gcc")
    target_dir.mkdir(parents=True, exist_ok=True)
    tmp = target_dir / f".{LIB_NAME}.{os.getpid()}.tmp"  # concurrent builds never share a file
    proc = subprocess.run([gcc, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(tmp), str(SOURCE)],
                          check=False, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise LabError(f"building the NVML stand-in failed: {proc.stderr[-1500:]}",
                       hint=f"fix {SOURCE} or the compiler setup")
    tmp.replace(lib)  # atomic: a concurrent build never sees half a library
    dev_link = target_dir / "libnvidia-ml.so"
    if not dev_link.is_symlink():
        try:
            dev_link.symlink_to(LIB_NAME)
        except FileExistsError:
            pass  # another build made it first
    return target_dir
