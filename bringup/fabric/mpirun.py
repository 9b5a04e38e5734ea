"""The multi-node NCCL test and the per-rail RDMA test, as command lines (pure).

As on a real cluster, ``mpirun`` (OpenMPI) runs on the first node of the group, reached
from the controller through the SSH seam (:mod:`bringup.remote.ssh`, see
:mod:`bringup.fabric.runner`); OpenMPI's own launcher then reaches the other nodes with
``ssh`` *on that node*. Its ssh uses the key and known_hosts on the launching node
(``NodeSsh``) with the same host-key policy as everything else
(:func:`bringup.remote.access.openssh_options`, ``StrictHostKeyChecking=yes``): a partner's
host key is pinned beforehand, never added on first use (nccl-tests issue #213 shows the
"Permanently added" warning this refuses). ``plm_rsh_no_tree_spawn`` keeps every ssh on
the launcher, so only it needs the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from bringup.errors import ConfigError
from bringup.remote.access import openssh_options

PERFTEST_PORT = 18515  # perftest's default TCP port for its out-of-band exchange


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
        return openssh_options(self.key_file, self.known_hosts, port=self.port, user=self.user)


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
