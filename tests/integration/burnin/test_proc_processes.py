"""The agent's process runner: timeouts kill the whole group, missing tools are reported."""

import pytest

pytestmark = pytest.mark.integration

import sys
import time

from burnin.proc import run_tool


def test_timeout_kills_tool_and_its_children():
    script = "import subprocess,sys,time; subprocess.Popen(['sleep','30']); print('begun', flush=True); time.sleep(30)"
    t = time.monotonic()
    run = run_tool([sys.executable, "-c", script], timeout_s=1.0)
    assert time.monotonic() - t < 4  # not waiting for the orphaned sleep: the group was killed
    assert run.timed_out and not run.ok
    assert "begun" in run.stdout
    assert "did not finish" in run.problem()


def test_stderr_tail_and_rc_kept():
    run = run_tool([sys.executable, "-c", "import sys; sys.stderr.write('x'*5000 + 'END'); sys.exit(3)"], 10)
    assert run.rc == 3 and run.evidence()["stderr_tail"].endswith("END")
    assert len(run.evidence()["stderr_tail"]) < 2100
