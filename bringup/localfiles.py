"""The controller's own host: secret files, refused where they are read unless only their
owner can read them (mode 0600 or narrower), and whether a local process still lives.

One check for every secret bringup reads (NetBox token, BMC credentials, SSH key): a
secret others can read is a secret others have, and OpenSSH silently ignores a private
key with mode 0644, after which every node would look unreachable and be blamed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from bringup.errors import SecretFileError


def check_secret_file(path: str | Path, what: str, *, missing_hint: str) -> Path:
    """``path`` if it exists and only its owner can read it; a :class:`SecretFileError`
    (a controller fault: the run stops, no node is blamed) naming the fix otherwise."""
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except OSError as exc:
        raise SecretFileError(f"cannot read the {what} {p}: {exc.strerror}", hint=missing_hint) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretFileError(f"the {what} {p} is mode {stat.S_IMODE(mode):04o}, readable by other users; "
                              "it must be 0600", hint=f"run `chmod 600 {p}` on the controller")
    return p


def read_secret_file(path: str | Path, what: str, *, missing_hint: str = "fix the path in the settings") -> str:
    p = check_secret_file(path, what, missing_hint=missing_hint)
    try:
        return p.read_text()
    except OSError as exc:
        raise SecretFileError(f"cannot read the {what} {p}: {exc.strerror}", hint=missing_hint) from None


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID lives in this PID namespace (unknown: alive)."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
