"""lab.procs with real processes: a service killed without a goodbye can be started again."""

from __future__ import annotations

import os
import signal
import time

import pytest

from lab import procs

pytestmark = pytest.mark.integration


def test_a_killed_service_is_dead_to_pid_of_and_starts_again(tmp_path):
    pid = procs.start("sleeper", ["sleep", "300"], run_dir=tmp_path, log_dir=tmp_path)
    assert procs.pid_of(tmp_path, "sleeper") == pid
    os.killpg(pid, signal.SIGKILL)   # our child: a zombie until reaped, and zombies answer kill(0)
    time.sleep(0.2)
    assert procs.pid_of(tmp_path, "sleeper") is None
    again = procs.start("sleeper", ["sleep", "300"], run_dir=tmp_path, log_dir=tmp_path)
    try:
        assert again != pid and procs.pid_of(tmp_path, "sleeper") == again
    finally:
        procs.stop("sleeper", tmp_path)
