"""Simulated nodes over a real OpenSSH sshd, and wait_for_ssh (through the SSH seam) with
pinned host keys."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from bringup.errors import SSHError
from bringup.remote.access import SshAccess, Target, expected_host_key, fingerprint, parse_public_key
from bringup.remote.ssh import Ssh, wait_for_ssh
from lab.nodes.install import node_status
from lab.nodes.serve import NodeSupervisor
from lab.nodes.sshd import NodeDir, sshd_binary, sshd_pid, stop_sshd

pytestmark = pytest.mark.integration


def ssh(lab, name, command):
    n = lab.fleet.node(name)
    return subprocess.run(
        ["ssh", "-i", str(lab.access.key_file), "-o", f"UserKnownHostsFile={lab.access.known_hosts}",
         "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-p", str(n.ssh_port),
         f"{lab.access.user}@{n.address}", command], check=False, capture_output=True, text=True, timeout=30)


def seam(lab, known_hosts: Path | None = None) -> Ssh:
    a = lab.access
    return Ssh(SshAccess(a.user, a.key_file, known_hosts or a.known_hosts))


def target(lab, name: str) -> Target:
    n = lab.fleet.node(name)
    return Target(name, n.address, n.ssh_port)


def test_installed_node_answers_ssh_with_its_environment(node_lab):
    out = ssh(node_lab, "ok", 'echo "$BRINGUP_SYSROOT"; echo "$BRINGUP_NODE"')
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(NodeDir(node_lab.home, "ok").root), "ok"]
    st = node_status(node_lab.home, "ok")
    assert st["installed"] and st["listening"] and st["versions"]["driver"] == "570.133.20"
    # the config we wrote is one sshd itself accepts
    cfg = NodeDir(node_lab.home, "ok").config
    assert subprocess.run([sshd_binary(), "-t", "-f", str(cfg)], check=False, capture_output=True).returncode == 0


def test_a_command_runs_with_the_nodes_path_not_the_lab_users_startup_files(node_lab):
    """The node's sessions run as the lab host's user, but with the node's environment
    only: bash reads that user's ~/.bashrc for a command over SSH unless told it is not the
    top-level shell (on the lab machines it prepended pyenv's shims to PATH and ran ~40
    processes per session)."""
    config = NodeDir(node_lab.home, "ok").config.read_text()
    want = re.search(r'(?<![A-Z_])PATH="([^"]*)"', config).group(1)
    out = ssh(node_lab, "ok", 'printf %s "$PATH"')
    assert out.returncode == 0, out.stderr
    assert out.stdout == want


def test_password_and_unknown_keys_are_refused(node_lab, tmp_path):
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    n = node_lab.fleet.node("ok")
    out = subprocess.run(["ssh", "-i", str(other), "-o", "IdentitiesOnly=yes",
                          "-o", f"UserKnownHostsFile={node_lab.access.known_hosts}",
                          "-o", "BatchMode=yes", "-p", str(n.ssh_port), f"{node_lab.access.user}@{n.address}", "true"],
                         check=False, capture_output=True, text=True, timeout=30)
    assert out.returncode == 255 and "Permission denied" in out.stderr


def test_wait_for_ssh_accepts_the_pinned_key(node_lab):
    n = node_lab.fleet.node("ok")
    want = expected_host_key(node_lab.access.known_hosts, n.address, n.ssh_port)
    pub = NodeDir(node_lab.home, "ok").host_key.with_suffix(".pub").read_text()
    assert want == " ".join(pub.split()[:2])
    assert wait_for_ssh(seam(node_lab), target(node_lab, "ok"), timeout=10) == fingerprint(parse_public_key(pub)[1])


def test_wait_for_ssh_refuses_another_key_naming_both_fingerprints(node_lab, tmp_path):
    ok, drift = node_lab.fleet.node("ok"), node_lab.fleet.node("drift")
    wrong = expected_host_key(node_lab.access.known_hosts, drift.address, drift.ssh_port)
    right = expected_host_key(node_lab.access.known_hosts, ok.address, ok.ssh_port)
    kh = tmp_path / "known_hosts"  # ok pinned with drift's key
    kh.write_text(f"[{ok.address}]:{ok.ssh_port} {wrong}\n")
    t0 = time.monotonic()
    with pytest.raises(SSHError) as exc:
        wait_for_ssh(seam(node_lab, kh), target(node_lab, "ok"), timeout=30)
    assert time.monotonic() - t0 < 10  # refused at once, not retried until the timeout
    msg = str(exc.value)
    assert f"presented host key {fingerprint(parse_public_key(right)[1])}" in msg
    assert f"we expect {fingerprint(parse_public_key(wrong)[1])}" in msg
    assert exc.value.transient is False


def test_never_returns_node_times_out(node_lab):
    n = node_lab.fleet.node("never")
    st = node_status(node_lab.home, "never")
    assert not st["installed"] and st["boot"] == "hung after install" and st["sshd_pid"] is None
    assert expected_host_key(node_lab.access.known_hosts, n.address, n.ssh_port)  # pinned: only its sshd is missing
    t0 = time.monotonic()
    with pytest.raises(SSHError, match=r"node never .* never came back: no SSH answer within 2s"):
        wait_for_ssh(seam(node_lab), target(node_lab, "never"), timeout=2, interval=0.3)
    assert 1.5 < time.monotonic() - t0 < 8


def test_wait_for_ssh_waits_for_a_node_that_comes_back(node_lab):
    n = node_lab.fleet.node("drift")
    assert stop_sshd(node_lab.home, "drift")
    import threading

    from lab.nodes.sshd import start_sshd
    timer = threading.Timer(1.5, start_sshd, args=(node_lab.home, n))
    timer.start()
    try:
        t0 = time.monotonic()
        wait_for_ssh(seam(node_lab), target(node_lab, "drift"), timeout=20, interval=0.25)
        assert time.monotonic() - t0 >= 1.0
    finally:
        timer.join()


def test_supervisor_starts_eight_nodes_and_restarts_a_dead_one(lab_factory):
    lab = lab_factory(83, [(f"n{i}", "[]") for i in range(1, 9)])
    try:
        for n in lab.fleet.nodes:
            stop_sshd(lab.home, n.name)
        sup = NodeSupervisor(lab.fleet, lab.home)
        took = sup.start_installed()
        print(f"\nstarting sshd for 8 nodes took {took:.3f}s")
        assert all(node_status(lab.home, n.name)["listening"] for n in lab.fleet.nodes)
        pid = sshd_pid(lab.home, "n3")
        subprocess.run(["kill", "-9", str(pid)], check=True)
        time.sleep(0.1)
        sup.tick()
        assert sshd_pid(lab.home, "n3") not in (None, pid)
        assert node_status(lab.home, "n3")["listening"]
    finally:
        sup.stop_all()
    assert not any(sshd_pid(lab.home, n.name) for n in lab.fleet.nodes)


def test_a_taken_address_is_a_clear_error(node_lab, monkeypatch):
    import socket

    import lab.nodes.sshd as sshd_mod
    from lab.errors import LabError
    n = node_lab.fleet.node("ok").model_copy(update={"name": "squatter"})
    # a node with a host key of its own (as its seed would give it), so only the address is wrong
    ok_key = NodeDir(node_lab.home, "ok").host_key
    sshd_mod.install_host_key(node_lab.home, n, ok_key.read_text(), Path(f"{ok_key}.pub").read_text())
    # the address of "ok" is held by its sshd: a second node there must not start
    with pytest.raises(LabError, match="is taken by another process"):
        sshd_mod.start_sshd(node_lab.home, n)
    # a port bound by someone else after our check shows up in sshd's own log
    late = node_lab.fleet.node("ok").model_copy(update={"name": "late", "ssh_port": 2299})
    sshd_mod.install_host_key(node_lab.home, late, ok_key.read_text(), Path(f"{ok_key}.pub").read_text())
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((late.address, 2299))
        s.listen()
        monkeypatch.setattr(sshd_mod, "port_open", lambda *a, **k: False)
        with pytest.raises(LabError, match="cannot listen on .*Address already in use"):
            sshd_mod.start_sshd(node_lab.home, late, timeout=5)
