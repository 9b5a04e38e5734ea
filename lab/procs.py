"""Start, find and stop the lab's background processes.

Each service is a detached process with a pid file under ``<home>/run`` and a log under
``<home>/logs``. Starting is idempotent: a live pid file means "already running".
Readiness is checked by the caller (a port that answers), not by the pid.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from lab.errors import LabError


def pid_of(run_dir: Path, name: str) -> int | None:
    pidfile = run_dir / f"{name}.pid"
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    # a killed child of ours stays a zombie until reaped, and a zombie still answers
    # kill(0): reap it, and take any other zombie for dead (seen: a NetBox killed by a
    # fault test could not be started again, its pid file "alive")
    _reap(pid)
    if _zombie(pid):
        pidfile.unlink(missing_ok=True)
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pidfile.unlink(missing_ok=True)
        return None
    except PermissionError:
        pass  # alive, owned by another user (postgres)
    return pid


def start(name: str, argv: list[str], *, run_dir: Path, log_dir: Path, env: dict[str, str] | None = None,
          cwd: Path | None = None, user: str | None = None) -> int:
    """Start ``argv`` detached unless a live process already owns the pid file."""
    pid = pid_of(run_dir, name)
    if pid:
        return pid
    run_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    if user:
        argv = ["runuser", "-u", user, "--", *argv]
    log = open(log_dir / f"{name}.log", "ab")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})}, cwd=cwd, start_new_session=True)
    log.close()
    (run_dir / f"{name}.pid").write_text(str(proc.pid))
    return proc.pid


def stop(name: str, run_dir: Path, timeout: float = 15.0) -> bool:
    """SIGTERM the process group, then SIGKILL after ``timeout``. True if it was running."""
    pid = pid_of(run_dir, name)
    if not pid:
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        _reap(pid)
        time.sleep(0.1)
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    (run_dir / f"{name}.pid").unlink(missing_ok=True)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[:1] == ["Z"]


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(check: Callable[[], bool], *, timeout: float, what: str, log: Path | None = None,
               alive: Callable[[], bool] | None = None) -> None:
    """Poll ``check`` until true; on timeout or death raise LabError with the log tail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if alive is not None and not alive():
            break
        time.sleep(0.25)
    tail = ""
    if log and log.exists():
        tail = "\n--- last lines of " + str(log) + " ---\n" + "\n".join(log.read_text(errors="replace").splitlines()[-25:])
    raise LabError(f"{what} did not become ready within {timeout:.0f}s{tail}",
                   hint=f"see {log}" if log else "")
