"""One real OpenSSH sshd per simulated node: keys, config, start, stop.

Each node's sshd listens on ``node.address:node.ssh_port`` with the host key its install
seed gave it (``<home>/nodes/<name>/ssh_host_ed25519_key``), accepts only the keys the
seed authorized (``<home>/nodes/<name>/authorized_keys``) and only the user running the lab, and hands every
session the node's environment through ``SetEnv`` (OpenSSH >= 8.7), so the tool
stand-ins, the NVML stand-in and ``BRINGUP_SYSROOT`` reach Ansible's commands with no
ForceCommand or wrapper. The sshd is a daemon with a pid file: it outlives whoever
started it (the supervisor, or the BMC simulator booting a node) until it is stopped.
"""

from __future__ import annotations

import fcntl
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lab.errors import LabError
from lab.fleet import NodeSpec
from lab.pki import write_private


def sshd_binary() -> str:
    found = shutil.which("sshd", path="/usr/sbin:/usr/local/sbin:" + os.environ.get("PATH", ""))
    if not found:
        raise LabError("OpenSSH's sshd is not installed", hint="apt-get install -y openssh-server")
    # sshd refuses to re-exec itself unless started by absolute path
    return str(Path(found).resolve())


@dataclass(frozen=True)
class NodeDir:
    """Where one simulated node keeps its files."""

    home: Path
    name: str

    @property
    def dir(self) -> Path:
        return self.home / "nodes" / self.name

    @property
    def root(self) -> Path:
        return self.dir / "root"

    @property
    def host_key(self) -> Path:
        return self.dir / "ssh_host_ed25519_key"

    @property
    def config(self) -> Path:
        return self.dir / "sshd_config"

    @property
    def pidfile(self) -> Path:
        return self.dir / "sshd.pid"

    @property
    def log(self) -> Path:
        return self.dir / "sshd.log"

    @property
    def state(self) -> Path:
        return self.dir / "state.json"

    @property
    def env_file(self) -> Path:
        return self.dir / "env.json"

    def read_state(self) -> dict:
        try:
            return json.loads(self.state.read_text())
        except (OSError, ValueError):
            return {}

    def read_env(self) -> dict[str, str]:
        try:
            return json.loads(self.env_file.read_text())
        except (OSError, ValueError):
            return {}


def secrets_dir(home: Path) -> Path:
    d = home / "secrets"
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o700)
    return d


def client_key(home: Path) -> Path:
    """The lab's SSH client key (``secrets/id_ed25519``), generated on first use."""
    key = secrets_dir(home) / "id_ed25519"
    if not key.exists():
        _keygen(key, f"bringup-lab@{socket.gethostname()}")
    return key


def known_hosts_path(home: Path) -> Path:
    return secrets_dir(home) / "known_hosts"


def _keygen(path: Path, comment: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                       check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise LabError("ssh-keygen is missing", hint="apt-get install -y openssh-client") from None
    except subprocess.CalledProcessError as exc:
        raise LabError(f"ssh-keygen failed for {path}: {exc.stderr.strip()}") from None


def host_public_key(home: Path, node: NodeSpec) -> str:
    """``ssh-ed25519 AAAA...`` of the node: the key its install seed gave it (never one the
    lab makes up; a node that was not installed from a seed has none)."""
    pub = Path(str(NodeDir(home, node.name).host_key) + ".pub")
    try:
        parts = pub.read_text().split()
    except FileNotFoundError:
        raise LabError(f"node {node.name} has no SSH host key: it was never installed from a seed",
                       hint="install it through its BMC (bringup provision) or lab.nodes.install.preinstall") from None
    return f"{parts[0]} {parts[1]}"


def install_host_key(home: Path, node: NodeSpec, private: str, public: str) -> None:
    """Make the seed's key pair the node's sshd host key (as cloud-init's ssh_keys does)."""
    nd = NodeDir(home, node.name)
    nd.dir.mkdir(parents=True, exist_ok=True)
    write_private(nd.host_key, private.encode())
    Path(str(nd.host_key) + ".pub").write_text(public.strip() + "\n")


def authorized_keys_file(home: Path, node: NodeSpec) -> Path:
    """The seed's authorized keys of the node; the lab's client key for nodes installed before seeds."""
    own = NodeDir(home, node.name).dir / "authorized_keys"
    return own if own.exists() else secrets_dir(home) / "id_ed25519.pub"


def _quote(name: str, value: str) -> str:
    if any(c in value for c in '"\n\\') or not name.replace("_", "").isalnum():
        raise LabError(f"environment {name} of a node cannot be passed through sshd SetEnv: {value!r}")
    return f'{name}="{value}"'


def render_config(home: Path, node: NodeSpec, env: dict[str, str]) -> str:
    nd = NodeDir(home, node.name)
    lines = [
        f"# sshd of simulated node {node.name}; written by lab.nodes, rewritten on every start",
        f"ListenAddress {node.address}:{node.ssh_port}",
        f"HostKey {nd.host_key}",
        f"PidFile {nd.pidfile}",
        f"AuthorizedKeysFile {authorized_keys_file(home, node)}",
        f"AllowUsers {getpass.getuser()}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        # the lab home may sit under /tmp (tests), whose mode StrictModes rejects
        "StrictModes no",
        "PrintMotd no",
        "X11Forwarding no",
        "AllowTcpForwarding no",
        "MaxStartups 64:30:128",
        "MaxSessions 32",
        "Subsystem sftp internal-sftp",
    ]
    if env:
        lines.append("SetEnv " + " ".join(_quote(k, v) for k, v in sorted(env.items())))
    return "\n".join(lines) + "\n"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def sshd_pid(home: Path, name: str) -> int | None:
    """The pid of the node's listening sshd, or None (a stale pid file is ignored)."""
    nd = NodeDir(home, name)
    try:
        pid = int(nd.pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    # a recycled pid must not pass for our sshd
    return pid if str(nd.config) in _cmdline(pid) else None


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (sshd forks a session process per connection)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the ppid follows the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def port_open(address: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


@contextmanager
def node_lock(home: Path, name: str) -> Iterator[None]:
    """Serialise start/stop of one node between the supervisor and the BMC simulator."""
    nd = NodeDir(home, name)
    nd.dir.mkdir(parents=True, exist_ok=True)
    with open(nd.dir / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _privsep_dir() -> None:
    # sshd running as root wants its privilege-separation chroot
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)


def start_sshd(home: Path, node: NodeSpec, timeout: float = 10.0) -> int:
    """Start the node's sshd unless it runs; return its pid once it listens."""
    nd = NodeDir(home, node.name)
    with node_lock(home, node.name):
        pid = sshd_pid(home, node.name)
        if pid:
            return pid
        client_key(home)
        _privsep_dir()
        if port_open(node.address, node.ssh_port, timeout=0.2):
            raise LabError(f"{node.address}:{node.ssh_port} of node {node.name} is taken by another process",
                           hint=f"find it with `ss -ltnp | grep {node.address}:{node.ssh_port}` and stop it")
        host_public_key(home, node)  # the key its seed gave it
        nd.config.write_text(render_config(home, node, nd.read_env()))
        nd.pidfile.unlink(missing_ok=True)
        log_size = nd.log.stat().st_size if nd.log.exists() else 0
        argv = [sshd_binary(), "-f", str(nd.config), "-E", str(nd.log)]
        # without -D sshd forks into the background, then binds and writes its pid file;
        # a bind failure only shows in its log (the exit status is already 0)
        proc = subprocess.run(argv, check=False, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = (proc.stderr or "").strip() or _tail(nd.log)
            raise LabError(f"sshd of node {node.name} did not start on {node.address}:{node.ssh_port}: {tail}",
                           hint=f"see {nd.log}; is the port taken by another process?")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = sshd_pid(home, node.name)
            if pid and port_open(node.address, node.ssh_port):
                return pid
            fresh = _log_since(nd.log, log_size)
            if "Cannot bind any address" in fresh:
                raise LabError(f"sshd of node {node.name} cannot listen on {node.address}:{node.ssh_port}: "
                               f"{' | '.join(fresh.strip().splitlines()[-2:])}",
                               hint="another process holds the address; stop it")
            time.sleep(0.02)
        raise LabError(f"sshd of node {node.name} started but does not answer on "
                       f"{node.address}:{node.ssh_port} after {timeout:.0f}s", hint=f"see {nd.log}")


def _log_since(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _tail(path: Path, n: int = 5) -> str:
    try:
        return " | ".join(path.read_text().splitlines()[-n:])
    except OSError:
        return "no log"


def stop_sshd(home: Path, name: str, *, sig: int = signal.SIGTERM, timeout: float = 5.0) -> bool:
    """Stop the node's sshd and every session under it. True if one was running."""
    with node_lock(home, name):
        pid = sshd_pid(home, name)
        if not pid:
            return False
        kill_tree(pid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.02)
        if _alive(pid):
            kill_tree(pid, signal.SIGKILL)
        NodeDir(home, name).pidfile.unlink(missing_ok=True)
        return True


def kill_tree(pid: int, sig: int) -> None:
    """Signal the sessions first, then the listener: killing only the listener would
    leave established connections (and the commands they run) alive."""
    for p in [*reversed(descendants(pid)), pid]:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is gone for our purpose
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
