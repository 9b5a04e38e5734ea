"""An ansible-playbook run dies with the process that started it (bringup.remote.deathsig):
a commission process SIGKILLed by tests/integration/flows/test_commission.py left its
ansible-playbook runs working as orphans (PPID 1) for 20+ minutes, on nodes the dead run
no longer held. Here a child process runs a play that sleeps on this machine (``local``
connection: no sshd needed), is SIGKILLed, and nothing of its run may be left."""

from __future__ import annotations

import getpass
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bringup.remote.access import SshAccess
from bringup.remote.ansible import run_playbook

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PDEATHSIG is Linux only")]

PLAY = """\
- hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: Work for a long time
      ansible.builtin.command: sleep 300
"""

QUICK = """\
- hosts: all
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        started_by: "{{ starter }}"
"""

#: the starter: run_playbook in its main thread, as a flow's step would
CHILD = """\
import getpass, sys
from pathlib import Path
from bringup.remote.access import SshAccess
from bringup.remote.ansible import run_playbook
tmp = Path(sys.argv[1])
access = SshAccess(getpass.getuser(), tmp / "key", tmp / "known_hosts")
run_playbook("sleep.yml", {"box": {"address": "127.0.0.1"}}, {}, access,
             private_data_dir=tmp / "run", playbooks_dir=tmp / "playbooks")
"""


def _setup(tmp: Path) -> SshAccess:
    (tmp / "playbooks").mkdir()
    (tmp / "playbooks" / "sleep.yml").write_text(PLAY)
    (tmp / "playbooks" / "quick.yml").write_text(QUICK)
    for name in ("key", "known_hosts"):  # run_playbook checks they exist; a local play uses neither
        (tmp / name).write_text("")
    return SshAccess(getpass.getuser(), tmp / "key", tmp / "known_hosts")


def _run_processes(marker: str) -> dict[int, str]:
    """pid -> command line of every process whose command line or environment names the
    run's private folder (ansible-playbook, its workers, the module and its ``sleep``)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours
            continue
        if marker.encode() in cmdline or marker.encode() in environ:
            found[int(proc.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


def _wait(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_a_killed_starter_takes_its_ansible_playbook_with_it(tmp_path):
    _setup(tmp_path)
    marker = str(tmp_path / "run")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], start_new_session=True)
    try:
        # the play is running once its task's `sleep 300` is there
        running = _wait(lambda: child.poll() is not None
                        or any(c == "sleep 300" for c in _run_processes(marker).values()), 60)
        assert running and child.poll() is None, (child.returncode, _run_processes(marker))
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        gone = _wait(lambda: not _run_processes(marker), 10)
        assert gone, f"left running after the starter died: {_run_processes(marker)}"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        for pid in _run_processes(marker):  # on failure: no orphan outlives the test either
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_play_through_the_guard_runs_and_reports_as_before(tmp_path):
    access = _setup(tmp_path)
    res = run_playbook("quick.yml", {"box": {"address": "127.0.0.1"}}, {"starter": os.getpid()}, access,
                       private_data_dir=tmp_path / "run", playbooks_dir=tmp_path / "playbooks")
    assert res.ok, res.hosts["box"].reason()
    assert res.hosts["box"].facts["started_by"] == os.getpid()
    assert not _run_processes(str(tmp_path / "run"))
