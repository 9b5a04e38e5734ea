"""Compile the NVML stand-in with gcc, once per source version, safely under concurrency.

Several builders can race for the same library: the BMC simulator installs nodes in
threads of one process (same pid), tests build in parallel processes. So a build writes a
temporary file with a name no other build uses (pid, thread and a random part), renames it
into place atomically, and holds a lock (a ``flock`` on a file next to the library, plus a
thread lock for builders in the same process) so the compiler runs once and a late
builder finds the finished library. The lab supervisor calls :func:`ensure_built` at
``lab prepare`` / ``lab up`` so node installs normally find it built.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import threading
import uuid
from pathlib import Path

from lab.errors import LabError

SOURCE = Path(__file__).with_name("nvml_stub.c")
#: every file the library is made of (nvml_stub.c includes nvml_mig.c): all are hashed
SOURCES = (SOURCE, Path(__file__).with_name("nvml_mig.c"))
LIB_NAME = "libnvidia-ml.so.1"
_THREAD_LOCK = threading.Lock()


def _target(out_dir: Path) -> Path:
    digest = hashlib.sha256(b"".join(src.read_bytes() for src in SOURCES)).hexdigest()[:16]
    return Path(out_dir) / f"nvml-{digest}"


def _compile(target_dir: Path, lib: Path) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        raise LabError("gcc is needed to build the lab's NVML stand-in", hint="apt-get install -y gcc")
    # unique per build: a pid alone is shared by the threads of one process
    tmp = target_dir / f".{LIB_NAME}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        proc = subprocess.run([gcc, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(tmp), str(SOURCE)],
                              check=False, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise LabError(f"building the NVML stand-in failed: {proc.stderr[-1500:]}",
                           hint=f"fix {SOURCE} or the compiler setup")
        if not tmp.exists() or tmp.stat().st_size == 0:
            raise LabError(f"building the NVML stand-in left no library at {tmp}")
        tmp.replace(lib)  # atomic: a reader never sees half a library
    finally:
        tmp.unlink(missing_ok=True)


def build_nvml(out_dir: Path) -> Path:
    """Build ``libnvidia-ml.so.1`` under ``out_dir/<source hash>/`` (once) and return that
    folder. Safe to call from many threads and processes at once."""
    target_dir = _target(out_dir)
    lib = target_dir / LIB_NAME
    dev_link = target_dir / "libnvidia-ml.so"
    if lib.exists() and dev_link.is_symlink():
        return target_dir
    target_dir.mkdir(parents=True, exist_ok=True)
    with _THREAD_LOCK, open(target_dir / ".build.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not lib.exists():
            _compile(target_dir, lib)
        if not dev_link.is_symlink():
            dev_link.symlink_to(LIB_NAME)
    return target_dir


def ensure_built(home: Path) -> Path:
    """Build the lab's GPU stand-ins once for lab ``home``: the NVML library in
    ``<home>/build`` (where node installs look for it). Returns the library's folder."""
    return build_nvml(Path(home) / "build")
