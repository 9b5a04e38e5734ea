"""Ansible adapter (ansible-runner): run one of our playbooks against some nodes.

Every run gets its own private folder (inventory, extra vars, runner artifacts) and its
own ``ANSIBLE_HOME`` / local / remote temp folders, so runs never share state and
nothing lands in the operator's ``~/.ansible``. Those folders live under the controller's
state folder (0700, see :func:`bringup.settings.state_dir`), never the system temp folder:
extra vars can hold a bootstrap token, and a controller killed mid-run cannot clean up.
Each folder is named after the pid of its controller; the next run removes those of
controllers that are gone. Ansible keeps its own OpenSSH connections, with the key,
known_hosts and host-key policy of :class:`~bringup.remote.access.SshAccess` (the one the
SSH seam applies): *our* known_hosts only, never the user's, never auto-added. The result keeps, per
host, whether it passed, the failed tasks with their messages and the facts the play set;
tasks marked ``no_log`` reach us already censored by Ansible, and the private folder
(where extra vars are written) is removed afterwards. On Linux ansible-playbook dies with the
process that started it (:mod:`bringup.remote.deathsig`): no orphan run keeps working on a
node whose lease we lost.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.errors import AnsibleSetupError, AnsibleTimeout, ConfigError
from bringup.localfiles import pid_alive
from bringup.remote import deathsig
from bringup.remote.access import SshAccess
from bringup.resources import data_dir
from bringup.settings import private_dir, state_dir

PLAYBOOKS_DIR = data_dir("playbooks")
#: characters of a failed task's stderr/stdout kept in the result
TAIL = 1500


@dataclass
class TaskFailure:
    task: str
    message: str
    unreachable: bool = False

    def __str__(self) -> str:
        return f"{self.task}: {self.message}"


@dataclass
class HostResult:
    name: str
    ok: bool = False
    unreachable: bool = False
    ran: bool = False
    failures: list[TaskFailure] = field(default_factory=list)
    #: facts set by the play (set_fact / registered summaries)
    facts: dict[str, Any] = field(default_factory=dict)

    def reason(self) -> str:
        if self.failures:
            return "; ".join(str(f) for f in self.failures)
        return "" if self.ok else "the play did not run on this host"


@dataclass
class PlaybookResult:
    playbook: str
    status: str
    rc: int
    hosts: dict[str, HostResult]

    @property
    def ok(self) -> bool:
        return self.rc == 0 and all(h.ok for h in self.hosts.values())

    def failed(self) -> dict[str, HostResult]:
        return {n: h for n, h in self.hosts.items() if not h.ok}


def _message(res: dict[str, Any]) -> str:
    """The useful part of a failed task's result: msg, then the tail of stderr/stdout."""
    if res.get("censored"):  # a no_log task: Ansible already replaced everything
        return str(res["censored"])
    parts = []
    msg = res.get("msg")
    if msg:
        parts.append(str(msg).strip())
    for key in ("stderr", "module_stderr", "stdout"):
        text = str(res.get(key) or "").strip()
        if text and text not in parts[0:1]:
            parts.append(f"{key}: {text[-TAIL:]}")
            break
    if "rc" in res and res.get("rc") not in (None, 0):
        parts.append(f"rc={res['rc']}")
    return " | ".join(parts) or "failed without a message"


def _path() -> str:
    """PATH for ansible-runner: the ansible-playbook installed next to this Python first
    (runner drops the playbook argument when given an explicit binary)."""
    here = str(Path(sys.executable).parent)
    path = f"{here}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    if not shutil.which("ansible-playbook", path=path):
        raise AnsibleSetupError("ansible-playbook is not installed", hint="install ansible-core in this environment")
    return path


def _command(playbook: Path, path: str, platform: str | None = None) -> dict[str, Any]:
    """The ansible_runner.run arguments that start ``playbook``: on Linux through the
    :mod:`~bringup.remote.deathsig` shim, so ansible-playbook gets SIGTERM when this process
    dies. PDEATHSIG fires when the parent *thread* exits, not the process: pexpect forks in
    the thread that called ansible_runner.run, and run_playbook blocks in that thread until
    the run ends, so that thread lives as long as the run. Elsewhere: ansible-runner's own
    ansible-playbook, as before (no PDEATHSIG: an orphan can outlive us there)."""
    real = shutil.which("ansible-playbook", path=path) or "ansible-playbook"
    binary, lead = deathsig.guarded(os.path.abspath(real), os.getpid(), platform)
    if binary is None:
        return {"playbook": str(playbook)}
    # with an explicit binary ansible-runner leaves the playbook out of the command line
    return {"playbook": str(playbook), "binary": binary, "cmdline": shlex.join([*lead, str(playbook)])}


def runner_root() -> Path:
    return state_dir() / "runner"


def sweep_runner_dirs(root: Path) -> list[Path]:
    """Remove the run folders of controllers that died (``<pid>-*`` whose pid is gone);
    returns what was removed."""
    removed = []
    for d in sorted(root.glob("*-*")) if root.is_dir() else []:
        pid = d.name.split("-", 1)[0]
        if d.is_dir() and pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def private_run_dir(root: Path | None = None) -> Path:
    """A new 0700 folder for one playbook run, under ``root`` (default :func:`runner_root`),
    after sweeping the leftovers of dead controllers."""
    root = private_dir(root or runner_root())
    sweep_runner_dirs(root)
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))


def _inventory(hosts: dict[str, dict[str, Any]], access: SshAccess) -> dict[str, Any]:
    inv: dict[str, Any] = {}
    for name, h in hosts.items():
        if "address" not in h:
            raise ConfigError(f"host {name} has no address")
        entry = {"ansible_host": h["address"], "ansible_port": int(h.get("port", 22)),
                 "ansible_user": access.user}
        if h.get("python"):
            entry["ansible_python_interpreter"] = h["python"]
        inv[name] = entry
    return {"all": {"hosts": inv}}


#: the control socket folder's name: mkdtemp adds 8 characters
CP_PREFIX = "bringup-cp-"
#: a Unix socket path holds at most 107 bytes; ssh names a master's socket ``%C`` (40 hex
#: characters) and first creates it with a 17-character random suffix
_SOCKET_PATH_MAX = 107
_SOCKET_NAME = 40 + 17


def control_dir_base(tmpdir: str) -> str:
    """Where the run's control socket folder goes: ``tmpdir`` when the whole socket path
    fits, else /tmp. A deep TMPDIR (a test worker's, 39 characters) made every SSH
    connection fail with "unix_listener: ... too long for Unix domain socket", which
    Ansible reports as the node being unreachable."""
    needed = len(tmpdir) + 1 + len(CP_PREFIX) + 8 + 1 + _SOCKET_NAME
    return tmpdir if needed <= _SOCKET_PATH_MAX else "/tmp"  # noqa: S108 - mkdtemp: a 0700 folder of ours


def _envvars(tmp: Path, cp: Path, access: SshAccess) -> dict[str, str]:
    ssh_args = " ".join([
        # one SSH connection per host for the whole run; closed by _close_masters()
        "-o ControlMaster=auto -o ControlPersist=60s",
        f"-o ControlPath={cp}/%C",
        # the host-key policy of bringup.remote.access, as Ansible's own ssh plugin takes it
        # (it adds the key file and ConnectTimeout itself, from the variables below)
        f"-o UserKnownHostsFile={access.known_hosts}",
        "-o GlobalKnownHostsFile=/dev/null",
        "-o StrictHostKeyChecking=yes",   # pinned: an unknown or changed key is refused
        "-o IdentitiesOnly=yes",
        "-o BatchMode=yes",
        "-o ServerAliveInterval=5 -o ServerAliveCountMax=3",
    ])
    return {
        "PATH": _path(),
        "ANSIBLE_HOME": str(tmp / "home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp / "local"),
        "ANSIBLE_REMOTE_TEMP": str(tmp / "remote"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(cp),
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_SSH_ARGS": ssh_args,
        "ANSIBLE_PRIVATE_KEY_FILE": str(access.key_file),
        "ANSIBLE_PIPELINING": "True",
        # raw commands (the playbooks' own, tasks/sysroot.yml) without a pseudo-terminal:
        # stdout and stderr stay apart and lines end in \n, as with a module
        "ANSIBLE_SSH_USETTY": "False",
        "ANSIBLE_SSH_RETRIES": "0",
        "ANSIBLE_TIMEOUT": "10",
        # the image installs python3 there; discovery could pick a stray one from a profile
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        # the inventory is ansible-runner's inventory/hosts.json, which the yaml plugin reads:
        # without this Ansible tries host_list, script and auto on it first (auto parses it
        # once more), about 0.1 s of CPU a run
        "ANSIBLE_INVENTORY_ENABLED": "yaml",
        "ANSIBLE_NOCOLOR": "True",
        "ANSIBLE_GATHERING": "explicit",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_LOCALHOST_WARNING": "False",
    }


def run_playbook(playbook: str, hosts: dict[str, dict[str, Any]], extravars: dict[str, Any] | None,
                 access: SshAccess, *, private_data_dir: Path | None = None, timeout: int | None = None,
                 forks: int = 16, playbooks_dir: Path = PLAYBOOKS_DIR) -> PlaybookResult:
    """Run ``playbooks/<playbook>`` on ``hosts`` (name -> {address, port[, python]}).

    Returns per-host results; raises :class:`AnsibleError` only when the run itself could
    not happen (missing playbook, syntax error, timeout of the whole run)."""
    import ansible_runner  # imported here: loading it is slow and only this adapter needs it

    path = playbooks_dir / playbook
    if not path.exists():
        raise ConfigError(f"no playbook {path}")
    if not hosts:
        raise ConfigError(f"no hosts to run {playbook} on")
    for p in (access.key_file, access.known_hosts):
        if not Path(p).exists():
            raise ConfigError(f"{p} does not exist", hint="check ssh_key_file / ssh_known_hosts in the settings")
    own_tmp = private_data_dir is None
    tmp = private_run_dir() if own_tmp else Path(private_data_dir)
    for sub in ("home", "local", "runner"):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
    cp = Path(tempfile.mkdtemp(prefix=CP_PREFIX, dir=control_dir_base(tempfile.gettempdir())))
    try:
        envvars = _envvars(tmp, cp, access)
        # if this process dies mid-run the finally below never runs, and need not:
        # ansible-playbook goes with it (deathsig), the SSH masters (detached by ssh, out of
        # deathsig's reach) exit on their own after ControlPersist's 60 s idle, and the next
        # run sweeps the private folder (sweep_runner_dirs)
        runner = ansible_runner.run(
            private_data_dir=str(tmp / "runner"), project_dir=str(playbooks_dir), **_command(path, envvars["PATH"]),
            inventory=_inventory(hosts, access), extravars=dict(extravars or {}),
            envvars=envvars, quiet=True, forks=forks,
            timeout=timeout, settings={"suppress_ansible_output": True, "idle_timeout": 0},
        )
        result = _collect(playbook, runner, hosts)
        if runner.status == "timeout":
            raise AnsibleTimeout(f"{playbook} did not finish within {timeout}s on {', '.join(hosts)}",
                                 hint="look at the nodes; raise the timeout if the play is legitimately slow")
        if not any(h.ran for h in result.hosts.values()) and runner.rc != 0:
            out = _stdout_tail(runner)
            raise AnsibleSetupError(f"{playbook} could not run (rc={runner.rc}, status={runner.status}): {out.strip()}",
                               hint="check the playbook syntax and the extra vars")
        return result
    finally:
        _close_masters(cp)
        shutil.rmtree(cp, ignore_errors=True)
        if own_tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _stdout_tail(runner: Any) -> str:
    try:
        return runner.stdout.read()[-TAIL:]
    except (OSError, AttributeError):  # the stdout artifact is optional
        return ""


def _close_masters(cp_dir: Path) -> None:
    """Stop the SSH master connections of the run, so no ssh process outlives it."""
    for sock in cp_dir.glob("*"):
        if sock.is_socket():
            subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "bringup-node"],
                           capture_output=True, timeout=10, check=False)


def _collect(playbook: str, runner: Any, hosts: dict[str, dict[str, Any]]) -> PlaybookResult:
    results = {name: HostResult(name) for name in hosts}
    for ev in runner.events:
        kind = ev.get("event", "")
        data = ev.get("event_data") or {}
        host = data.get("host")
        if host not in results:
            continue
        hr = results[host]
        res = data.get("res") or {}
        if kind in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable", "runner_on_skipped"):
            hr.ran = True
        if kind == "runner_on_ok" and isinstance(res.get("ansible_facts"), dict):
            hr.facts.update(res["ansible_facts"])
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            hr.failures.append(TaskFailure(data.get("task", "?"), _message(res)))
        elif kind == "runner_on_unreachable":
            hr.unreachable = True
            hr.failures.append(TaskFailure(data.get("task", "?"), _message(res), unreachable=True))
    stats = runner.stats or {}
    for name, hr in results.items():
        bad = any(name in (stats.get(k) or {}) for k in ("failures", "dark"))
        hr.ok = hr.ran and not bad and not hr.failures
    return PlaybookResult(playbook=playbook, status=str(runner.status), rc=int(runner.rc or 0), hosts=results)
