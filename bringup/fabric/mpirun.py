"""The multi-node NCCL test and the per-rail RDMA test, as commands and as SSH runs.

As on a real cluster, ``mpirun`` (OpenMPI) runs on the first node of the group, reached
over SSH from the controller; OpenMPI's own launcher then reaches the other nodes with
``ssh``. Its ssh uses the key and known_hosts *on the launching node* (``NodeSsh``), with
``StrictHostKeyChecking=yes``: a partner's host key is pinned beforehand, never added on
first use (nccl-tests issue #213 shows the "Permanently added" warning this refuses).
``plm_rsh_no_tree_spawn`` keeps every ssh on the launcher, so only it needs the key.

The pure part builds argv lists (:func:`mpirun_argv`, :func:`nccl_argv`,
:func:`ib_write_bw_argv`); :class:`FabricSsh` is the adapter that runs them through
OpenMPI's ``ssh`` from the controller. A test that runs and fails is a value
(:class:`RunOutput` with its exit status), never an exception; SSH trouble raises by class.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from bringup.remote.ansible import SshAccess
from bringup.errors import AuthError, ConfigError, HostKeyMismatch, SSHDropped, SSHUnreachable

PERFTEST_PORT = 18515  # perftest's default TCP port for its out-of-band exchange
# printed to stderr by the remote shell before the command: without it, an exit status of
# 255 is ssh's own failure; with it, 255 is the command's (mpirun's inner ssh failing)
_STARTED = "bringup-fabric: command started"


@dataclass(frozen=True)
class MpiHost:
    """One node of the group: how its partners reach it, and how many ranks it takes."""

    name: str
    address: str
    slots: int


@dataclass(frozen=True)
class NodeSsh:
    """How OpenMPI's ssh on the launching node reaches the others (paths on that node)."""

    key_file: str
    known_hosts: str
    port: int = 22
    user: str = ""

    def options(self) -> list[str]:
        for what, path in (("key file", self.key_file), ("known_hosts", self.known_hosts)):
            # plm_rsh_args is split on spaces by OpenMPI: a path with one cannot pass
            if not path or any(c.isspace() for c in path) or not PurePosixPath(path).is_absolute():
                raise ConfigError(f"the nodes' SSH {what} {path!r} must be an absolute path without spaces",
                                  hint="OpenMPI splits plm_rsh_args on whitespace")
        opts = ["-i", self.key_file, "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={self.known_hosts}",
                "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
        if self.port != 22:
            opts += ["-p", str(self.port)]
        if self.user:
            opts += ["-l", self.user]
        return opts


def nccl_argv(test: str = "all_reduce_perf", *, begin: str = "8", end: str = "8G", factor: int = 2,
              gpus_per_rank: int = 1, extra: list[str] | None = None) -> list[str]:
    """``all_reduce_perf -b 8 -e 8G -f 2 -g 1``: one GPU per rank (one rank per GPU)."""
    if not test.rsplit("/", 1)[-1].endswith("_perf"):
        raise ConfigError(f"{test!r} is not an nccl-tests binary (…_perf)")
    return [test, "-b", str(begin), "-e", str(end), "-f", str(factor), "-g", str(gpus_per_rank), *(extra or [])]


def mpirun_argv(hosts: list[MpiHost], program: list[str], ssh: NodeSsh, *, env: dict[str, str | None] | None = None,
                tag_output: bool = True, allow_run_as_root: bool = False,
                mca: dict[str, str] | None = None) -> list[str]:
    """OpenMPI ``mpirun`` running ``program`` once per slot over ``hosts`` (in that order:
    ranks fill the first host's slots first, as ``--map-by slot`` does).

    ``env``: variables handed to every rank with ``-x`` (``None`` passes the launcher's own
    value). Everything else a rank sees comes from its node's own environment.
    """
    if len(hosts) < 1:
        raise ConfigError("an mpirun needs at least one host")
    if len({h.address for h in hosts}) != len(hosts):
        raise ConfigError("the group names a host twice", hint="pass each node once")
    for h in hosts:
        if h.slots < 1:
            raise ConfigError(f"node {h.name} has {h.slots} slots (GPUs); a rank per GPU needs at least one")
    np = sum(h.slots for h in hosts)
    argv = ["mpirun", "-np", str(np), "--host", ",".join(f"{h.address}:{h.slots}" for h in hosts),
            "--map-by", "slot", "--bind-to", "none",
            "--mca", "plm_rsh_agent", "ssh",
            "--mca", "plm_rsh_args", " ".join(ssh.options()),
            # every ssh from the launcher: only it holds the key and the pinned host keys
            "--mca", "plm_rsh_no_tree_spawn", "1"]
    for k, v in sorted((mca or {}).items()):
        argv += ["--mca", k, v]
    if tag_output:
        argv.append("--tag-output")
    if allow_run_as_root:
        argv.append("--allow-run-as-root")
    for name, value in sorted((env or {}).items()):
        if not name.replace("_", "").isalnum():
            raise ConfigError(f"{name!r} is not an environment variable name")
        argv += ["-x", name if value is None else f"{name}={value}"]
    return argv + list(program)


def ib_write_bw_argv(device: str, *, server: str | None = None, port: int = PERFTEST_PORT, size: int = 65536,
                     iterations: int = 5000, gpu: int | None = None, bind: str | None = None) -> list[str]:
    """perftest ``ib_write_bw`` on one HCA: the server side without ``server``, the client
    side with the server's address. ``gpu`` adds ``--use_cuda`` (GPUDirect RDMA) where the
    image has a CUDA build of perftest. ``bind`` (``--bind_source_ip``) pins the out-of-band
    connection's source address."""
    argv = ["ib_write_bw", "-d", device, "-p", str(port), "-s", str(size), "-n", str(iterations),
            "-F", "--report_gbits"]
    if gpu is not None:
        argv.append(f"--use_cuda={gpu}")
    if bind:
        argv += ["--bind_source_ip", bind]
    if server:
        argv.append(server)
    return argv


@dataclass
class RunOutput:
    """What a test printed and how it ended; ``timed_out`` means it never finished."""

    command: list[str]
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    host: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out


@dataclass(frozen=True)
class Target:
    """How the controller reaches one node over SSH."""

    name: str
    address: str
    port: int = 22


class FabricSsh:
    """The adapter: runs fabric test commands on nodes over OpenSSH, host keys pinned."""

    def __init__(self, access: SshAccess) -> None:
        self.access = access

    def _ssh(self, t: Target, command: list[str]) -> list[str]:
        return ["ssh", "-i", str(self.access.key_file), "-o", "IdentitiesOnly=yes",
                "-o", f"UserKnownHostsFile={self.access.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-p", str(t.port),
                f"{self.access.user}@{t.address}", f"echo '{_STARTED}' >&2; exec {shlex.join(command)}"]

    def run(self, t: Target, command: list[str], timeout: float) -> RunOutput:
        t0 = time.monotonic()
        try:
            p = subprocess.run(self._ssh(t, command), capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            return RunOutput(command, None, _text(exc.stdout), _text(exc.stderr), time.monotonic() - t0,
                             timed_out=True, host=t.name)
        out = RunOutput(command, p.returncode, p.stdout, p.stderr, time.monotonic() - t0, host=t.name)
        _raise_for_ssh(t, out)
        return out

    def start(self, t: Target, command: list[str]) -> subprocess.Popen[str]:
        """Start a command that runs until its partner is done (a perftest server)."""
        return subprocess.Popen(self._ssh(t, command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL)

    def collect(self, t: Target, proc: subprocess.Popen[str], command: list[str], timeout: float) -> RunOutput:
        t0 = time.monotonic()
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            return RunOutput(command, None, stdout, stderr, time.monotonic() - t0, timed_out=True, host=t.name)
        out = RunOutput(command, proc.returncode, stdout, stderr, time.monotonic() - t0, host=t.name)
        _raise_for_ssh(t, out)
        return out


def _text(b: bytes | str | None) -> str:
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def _raise_for_ssh(t: Target, out: RunOutput) -> None:
    """ssh exits 255 for its own failures; the command's own status passes through. A
    command that started and exits 255 (mpirun when its ssh to a partner fails) is the
    test's result, unless our own session to ``t`` was closed under it."""
    started = _STARTED in out.stderr
    out.stderr = "\n".join(ln for ln in out.stderr.splitlines() if ln.strip() != _STARTED)
    if out.rc != 255:
        return
    err = out.stderr
    who = f"node {t.name} ({t.address}:{t.port})"
    if started:
        if f"Connection to {t.address} closed" in err:
            raise SSHDropped(f"the SSH session to {who} dropped during the fabric test")
        return
    if "Host key verification failed" in err or "REMOTE HOST IDENTIFICATION HAS CHANGED" in err:
        raise HostKeyMismatch(f"{who} did not present its pinned host key; refusing to run the fabric test",
                              hint="compare the node's host key with the known_hosts entry")
    if "Connection refused" in err or "timed out" in err or "No route to host" in err:
        raise SSHUnreachable(f"{who} did not answer SSH: {err.strip().splitlines()[-1] if err.strip() else ''}")
    if "Permission denied" in err:
        # our key is not accepted: the controller's setup, not the node's health
        raise AuthError(f"{who} refused our SSH key", hint="check the settings' ssh_key_file and the node's "
                        "authorized_keys")
    raise SSHUnreachable(f"SSH to {who} failed before the command started: "
                         f"{err.strip().splitlines()[-1] if err.strip() else 'no message'}")
