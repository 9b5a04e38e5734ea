"""Run an external tool with a hard timeout and keep what the evidence needs.

Every tool runs in its own process group so that a hung tool and its children are killed
together; a tool that is missing, times out or crashes becomes a :class:`ToolRun` the check
turns into a failed result with the tail of stderr, never an exception or a hang. The
groups still running are known (:func:`kill_running`), so an agent told to stop does not
leave a hung tool behind on the node.
"""

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

TAIL_CHARS = 2000
_RUNNING: set[int] = set()
_RUNNING_LOCK = threading.Lock()
_STOPPING = threading.Event()


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


@dataclass
class ToolRun:
    argv: list[str]
    rc: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    missing: bool = False
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out and not self.missing and not self.error

    def evidence(self) -> dict[str, object]:
        return {
            "command": self.argv,
            "rc": self.rc,
            "duration_s": round(self.duration_s, 3),
            "timed_out": self.timed_out,
            "missing": self.missing,
            "stdout_tail": tail(self.stdout),
            "stderr_tail": tail(self.stderr),
        }

    def problem(self) -> str:
        """A one-line reason when the run itself went wrong, else ''."""
        name = os.path.basename(self.argv[0]) if self.argv else "tool"
        if self.missing:
            return f"{name} is not installed or not on PATH"
        if self.timed_out:
            return f"{name} did not finish within its timeout and was killed"
        if self.error:
            return f"{name} could not be started: {self.error}"
        if self.rc is not None and self.rc < 0:
            return f"{name} was killed by signal {-self.rc}"
        return ""


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_running() -> None:
    """Kill the process groups of the tools still running (the agent is being stopped).
    A tool being started right now is registered under the same lock, so it is either
    killed here or never started."""
    with _RUNNING_LOCK:
        _STOPPING.set()
        groups = list(_RUNNING)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run_tool(argv: list[str], timeout_s: float, env: dict[str, str] | None = None,
             cwd: str | None = None) -> ToolRun:
    run = ToolRun(argv=list(argv))
    exe = argv[0] if os.path.sep in argv[0] else shutil.which(argv[0])
    if not exe or not os.path.exists(exe):
        run.missing = True
        return run
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    start = time.monotonic()
    with _RUNNING_LOCK:  # started and registered as one step (see kill_running)
        if _STOPPING.is_set():
            run.error = "the agent is stopping"
            return run
        try:
            proc = subprocess.Popen([exe] + list(argv[1:]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, env=full_env, cwd=cwd, start_new_session=True)
        except OSError as exc:
            run.error = exc.strerror or str(exc)
            return run
        _RUNNING.add(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        run.timed_out = True
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            # a grandchild kept the pipes open; give up on the rest of the output
            out, err = b"", b""
    finally:
        _kill_group(proc)
        with _RUNNING_LOCK:
            _RUNNING.discard(proc.pid)
    run.rc = proc.returncode
    run.stdout = out.decode("utf-8", "replace")
    run.stderr = err.decode("utf-8", "replace")
    run.duration_s = time.monotonic() - start
    return run
