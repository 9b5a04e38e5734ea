"""The guard that ties ansible-playbook to its starter (bringup.remote.deathsig): which
command ansible-runner is given, and what the shim does before it execs. No process is
started here; tests/integration/nodes/test_ansible_dies_with_starter.py kills a real one."""

from __future__ import annotations

import ast
import shlex
import signal
import sys
from pathlib import Path

import pytest

from bringup.remote import deathsig
from bringup.remote.ansible import _command


def test_on_linux_ansible_runner_starts_the_shim_with_our_python():
    binary, lead = deathsig.guarded("/venv/bin/ansible-playbook", 4242, "linux", "/venv/bin/python")
    assert binary == "/venv/bin/python"
    assert lead == ["-I", deathsig.__file__, "4242", "/venv/bin/ansible-playbook"]
    assert Path(lead[1]).is_file() and lead[1].endswith("deathsig.py")


@pytest.mark.parametrize("platform", ["darwin", "win32", "freebsd14"])
def test_elsewhere_ansible_runner_runs_its_own_ansible_playbook(platform):
    assert deathsig.guarded("/venv/bin/ansible-playbook", 4242, platform) == (None, [])
    assert _command(Path("/p/pin.yml"), "/usr/bin", platform) == {"playbook": "/p/pin.yml"}


def test_the_playbook_follows_the_shim_on_the_command_line(tmp_path):
    # ansible-runner drops the playbook when given a binary: it must be in cmdline, quoted
    (tmp_path / "ansible-playbook").write_text("")
    (tmp_path / "ansible-playbook").chmod(0o755)
    args = _command(Path("/play books/pin.yml"), str(tmp_path), "linux")
    assert args["binary"] == sys.executable
    words = shlex.split(args["cmdline"])
    assert words[0] == "-I" and words[1] == deathsig.__file__
    assert words[2].isdigit()  # this process: the one the shim's parent must be
    assert words[3:] == [str(tmp_path / "ansible-playbook"), "/play books/pin.yml"]


class Fake:
    def __init__(self, ppid: int = 4242, prctl_rc: int = 0):
        self.calls: list[tuple] = []
        self.ppid, self.prctl_rc = ppid, prctl_rc

    def run(self, argv):
        return deathsig.main(argv, prctl=self.prctl, getppid=self.getppid, reset=self.reset, execv=self.execv)

    def prctl(self, sig):
        self.calls.append(("prctl", sig))
        return self.prctl_rc

    def getppid(self):
        self.calls.append(("getppid",))
        return self.ppid

    def reset(self, sig):
        self.calls.append(("reset", sig))

    def execv(self, path, argv):
        self.calls.append(("execv", path, argv))


ARGV = ["4242", "/venv/bin/ansible-playbook", "/p/pin.yml", "-i", "/run/inventory", "--forks", "16"]


def test_the_shim_sets_the_death_signal_checks_its_parent_then_execs_ansible_playbook():
    fake = Fake()
    fake.run(ARGV)
    assert fake.calls == [
        ("prctl", signal.SIGTERM),  # first: a parent that dies after the check is then covered
        ("getppid",),
        ("reset", signal.SIGTERM),  # a SIGTERM ignored by the starter would make it a no-op
        ("execv", "/venv/bin/ansible-playbook",
         ["/venv/bin/ansible-playbook", "/p/pin.yml", "-i", "/run/inventory", "--forks", "16"]),
    ]


def test_a_starter_already_gone_runs_nothing():
    fake = Fake(ppid=1)  # reparented to init (or a subreaper) before prctl
    assert fake.run(ARGV) == deathsig.STARTER_GONE
    assert [c[0] for c in fake.calls] == ["prctl", "getppid"]


def test_no_guard_no_run():
    fake = Fake(prctl_rc=-1)
    assert fake.run(ARGV) != 0
    assert [c[0] for c in fake.calls] == ["prctl"]


@pytest.mark.parametrize("argv", [[], ["4242"], ["me", "/venv/bin/ansible-playbook"]])
def test_a_malformed_shim_command_runs_nothing(argv):
    fake = Fake()
    assert fake.run(argv) == 2
    assert fake.calls == []


def test_the_shim_imports_only_the_standard_library():
    # run as `python -I deathsig.py`: bringup is not importable there
    tree = ast.parse(Path(deathsig.__file__).read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names <= set(sys.stdlib_module_names) | {"__future__"}, names
