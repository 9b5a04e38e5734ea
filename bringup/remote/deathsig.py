"""Tie an ansible-playbook process to the life of the bringup process that started it.

ansible-runner starts ansible-playbook through pexpect: a pty fork, so a new session that a
kill of our process group never reaches, and the run's timeout is enforced in *our*
process. When we die (SIGKILL, an OOM-killed Prefect worker), ansible-playbook used to run
on as an orphan for as long as its play lasted, configuring or burning in nodes whose lease
we no longer held: two writers on one machine once another run took the node.

So on Linux ansible-runner does not start ansible-playbook itself but this file, run as a
script by our own Python (``python -I deathsig.py <starter pid> <ansible-playbook> ARGS``).
It asks the kernel for SIGTERM when its parent dies (``prctl(PR_SET_PDEATHSIG)``, which
survives execve), checks that the parent is still the starter (it may have died before the
prctl: then nothing would ever signal us) and execs the real ansible-playbook. SIGTERM, not
SIGKILL: ansible-playbook's TaskQueueManager forwards SIGTERM to its workers, each in a
session of its own (setsid), and each kills its process group (the module, its ssh client)
before dying; a SIGKILL would leave those workers running their task.

Run as a script it imports nothing of ours (``-I`` keeps this folder off ``sys.path``):
only the standard library, so it works from a checkout and from the wheel alike.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence

#: linux/prctl.h
PR_SET_PDEATHSIG = 1
#: what the kernel sends ansible-playbook when its starter dies (see the module docstring)
DEATH_SIGNAL = signal.SIGTERM
#: exit status when the starter was already gone: nobody reads it, but it is not 0
STARTER_GONE = 75


def guarded(real: str, starter_pid: int, platform: str | None = None,
            python: str | None = None) -> tuple[str | None, list[str]]:
    """What ansible-runner should start for the ansible-playbook at ``real``:
    ``(binary, leading arguments)``. ``binary`` None means ansible-runner's own
    ansible-playbook, unguarded: not Linux (no PDEATHSIG there), behaviour as before.

    The shim is given as a script argument of ``python`` rather than as an executable
    with a shebang: a shebang line is cut at 255 bytes and split at no space, and a state
    folder on a noexec mount could not run it."""
    if not (platform or sys.platform).startswith("linux"):
        return None, []
    return python or sys.executable, ["-I", os.path.abspath(__file__), str(starter_pid), real]


def _prctl_pdeathsig(sig: int) -> int:
    import ctypes  # only in the shim: the library side never needs it

    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(sig),
                          ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)))


def _default_disposition(sig: int) -> None:
    signal.signal(sig, signal.SIG_DFL)


def main(argv: Sequence[str], *, prctl: Callable[[int], int] = _prctl_pdeathsig,
         getppid: Callable[[], int] = os.getppid,
         reset: Callable[[int], object] = _default_disposition,
         execv: Callable[[str, list[str]], object] = os.execv) -> int:
    """The shim: ``argv`` is ``<starter pid> <ansible-playbook> ARGS``. Execs (never
    returns) when the guard is in place; returns an exit status when it cannot be."""
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: deathsig.py STARTER_PID ANSIBLE_PLAYBOOK [ARGS...]", file=sys.stderr)
        return 2
    starter, real = int(argv[0]), argv[1]
    if prctl(int(DEATH_SIGNAL)) != 0:
        # fail closed: an unguarded run is exactly the orphan this shim exists to prevent
        print(f"deathsig: prctl(PR_SET_PDEATHSIG) failed (errno {_errno()})", file=sys.stderr)
        return 70
    if getppid() != starter:  # died between fork and prctl: the kernel will not tell us
        return STARTER_GONE
    # a starter that ignores SIGTERM passes SIG_IGN on through fork and exec, which would
    # make the death signal a no-op until Ansible installs its own handler
    reset(int(DEATH_SIGNAL))
    execv(real, [real, *argv[2:]])
    return 71  # only a fake execv returns


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
