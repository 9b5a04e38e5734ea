"""The SSH seam (bringup.remote.ssh) over a fake paramiko client: one run() for every
command, one host-key policy (pinned in our known_hosts, never learnt), and SSH trouble
mapped to bringup's error classes in one place. No socket is opened here."""

from __future__ import annotations

import paramiko
import pytest
from ssh_fakes import FakeChannel, Node, client_key, ed25519, seam

from bringup import errors
from bringup.remote.access import SshAccess, Target, fingerprint, parse_public_key
from bringup.remote.ssh import HostKeyNotPinned, NodeRefusedOurKey, RemoteCommandFailed, Ssh, wait_for_ssh

T = Target("n1", "127.0.0.5", 2222)


@pytest.fixture
def node():
    key, host = ed25519()
    n = Node(key)
    n.pinned = host.pinned
    return n


def test_a_command_runs_quoted_with_its_input_and_comes_back_typed(tmp_path, node):
    node.channels.append(FakeChannel(stdout=b"image: u24\n", stderr=b"warn\n", rc=0, ticks=2))
    ssh, _ = seam(tmp_path, node, pinned=node.pinned)
    out = ssh.run(T, ["cat", "/etc/bringup/image yaml"], timeout=5, input="hello")
    assert out.ok and out.rc == 0 and out.stdout == "image: u24\n" and out.stderr == "warn\n"
    assert out.host == "n1" and out.host_key == fingerprint(node.server_key.asbytes())
    client = node.clients[0]
    chan = client.get_transport().channel
    assert chan.command == "cat '/etc/bringup/image yaml'" and chan.sent == b"hello" and chan.write_shut
    # our key only: no agent, no ~/.ssh keys; the node's port; every session closed after
    kw = client.kwargs
    assert kw["port"] == 2222 and kw["username"] == "bringup" and isinstance(kw["pkey"], paramiko.PKey)
    assert kw["look_for_keys"] is False and kw["allow_agent"] is False
    assert chan.closed and client.was_closed


def test_a_shell_line_is_sent_as_it_is_and_stdin_is_closed_without_input(tmp_path, node):
    ssh, _ = seam(tmp_path, node, pinned=node.pinned)
    ssh.run(T, 'cat "${BRINGUP_SYSROOT:-}/etc/x"', timeout=5)
    chan = node.clients[0].get_transport().channel
    assert chan.command == 'cat "${BRINGUP_SYSROOT:-}/etc/x"' and chan.sent == b"" and chan.write_shut


def test_another_key_than_the_pinned_one_is_refused_naming_both(tmp_path, node):
    _, other = ed25519()
    ssh, _ = seam(tmp_path, node, pinned=other.pinned)
    with pytest.raises(errors.HostKeyMismatch) as exc:
        ssh.run(T, ["true"], timeout=5)
    msg = str(exc.value)
    assert f"presented host key {fingerprint(node.server_key.asbytes())}" in msg
    assert f"we expect {fingerprint(parse_public_key(other.pinned)[1])} (ssh-ed25519)" in msg
    assert "node n1 (127.0.0.5:2222)" in msg and "refusing to connect" in msg
    assert not exc.value.transient and "intruder" in exc.value.hint
    assert node.clients[0].get_transport() is None  # no session was opened


def test_an_unpinned_key_is_refused_and_never_learnt(tmp_path, node):
    ssh, _ = seam(tmp_path, node, pinned=None)
    with pytest.raises(HostKeyNotPinned) as exc:
        ssh.run(T, ["true"], timeout=5)
    assert isinstance(exc.value, errors.ConfigError) and exc.value.controller_fault and not exc.value.transient
    assert "pins no key for [127.0.0.5]:2222" in str(exc.value) and "ssh_host_key" in exc.value.hint
    assert ssh.access.known_hosts.read_text() == ""  # nothing added on first use


@pytest.mark.parametrize("raised, cls", [
    (ConnectionRefusedError(111, "Connection refused"), errors.SSHUnreachable),
    (TimeoutError("timed out"), errors.SSHUnreachable),
    (paramiko.ssh_exception.NoValidConnectionsError({("127.0.0.5", 2222): OSError("refused")}), errors.SSHUnreachable),
    (paramiko.SSHException("Error reading SSH protocol banner"), errors.SSHUnreachable),
    (EOFError(), errors.SSHUnreachable),
    (paramiko.AuthenticationException("Authentication failed."), NodeRefusedOurKey),
    (paramiko.BadAuthenticationType("Bad authentication type", ["password"]), NodeRefusedOurKey),
    (paramiko.ssh_exception.IncompatiblePeer("no acceptable host key"), errors.SSHError),
])
def test_ssh_trouble_is_raised_by_class(tmp_path, node, raised, cls):
    node.fail = raised
    ssh, _ = seam(tmp_path, node, pinned=node.pinned)
    with pytest.raises(cls) as exc:
        ssh.run(T, ["true"], timeout=5)
    e = exc.value
    assert type(e) is cls and "node n1 (127.0.0.5:2222)" in str(e)
    assert e.transient is (cls is errors.SSHUnreachable)
    if cls is NodeRefusedOurKey:  # our side to fix: the node is never blamed for it
        assert isinstance(e, errors.AuthError) and e.controller_fault and "ssh_key_file" in e.hint
    assert node.clients[0].was_closed


def test_our_key_readable_by_others_stops_before_any_connection(tmp_path, node):
    ssh, _ = seam(tmp_path, node, pinned=node.pinned)
    ssh.access.key_file.chmod(0o644)
    with pytest.raises(errors.SecretFileError, match="0644"):
        ssh.run(T, ["true"], timeout=5)
    assert node.clients == []


def test_a_missing_known_hosts_is_our_setup(tmp_path, node):
    ssh = Ssh(SshAccess("u", client_key(tmp_path), tmp_path / "nope"), client=node.client)
    with pytest.raises(errors.ConfigError, match="cannot read known_hosts"):
        ssh.run(T, ["true"], timeout=5)


def test_a_command_exit_status_is_its_own_result_even_255(tmp_path, node):
    # mpirun exits 255 when its own ssh to a partner fails: that is the test's result,
    # not our session's failure (which raises, above, before any command runs)
    node.channels += [FakeChannel(stderr=b"Host key verification failed.\n", rc=255), FakeChannel(rc=1)]
    ssh, _ = seam(tmp_path, node, pinned=node.pinned)
    out = ssh.run(T, ["mpirun"], timeout=5)
    assert out.rc == 255 and not out.ok and "Host key verification failed" in out.stderr
    with pytest.raises(RemoteCommandFailed, match="'false' on node n1 .* exited 1"):
        ssh.run(T, ["false"], timeout=5, check=True)


def test_a_session_lost_under_the_command_is_dropped_and_a_signal_is_no_status(tmp_path, node):
    node.channels += [FakeChannel(stdout=b"partial", end="drop", ticks=1), FakeChannel(end="signal")]
    ssh, _ = seam(tmp_path, node, pinned=node.pinned)
    with pytest.raises(errors.SSHDropped, match="dropped while 'mpirun -np 16' ran"):
        ssh.run(T, ["mpirun", "-np", "16"], timeout=5)
    out = ssh.run(T, ["ib_write_bw"], timeout=5)  # killed by a signal: ended, without an exit status
    assert out.rc == -1 and not out.ok and not out.timed_out


def test_a_command_past_its_deadline_comes_back_timed_out_with_its_output(tmp_path, node):
    node.channels.append(FakeChannel(stdout=b"# nThread 1\n", end="never"))
    ssh, clock = seam(tmp_path, node, pinned=node.pinned)
    out = ssh.run(T, ["all_reduce_perf"], timeout=30)
    assert out.timed_out and out.rc is None and out.stdout == "# nThread 1\n"
    assert 30 <= clock.now <= 31 and node.clients[0].get_transport().channel.closed


def test_a_started_command_is_polled_waited_for_or_killed(tmp_path, node):
    node.channels += [FakeChannel(stdout=b"Waiting for client", ticks=3, rc=0), FakeChannel(end="never")]
    ssh, _ = seam(tmp_path, node, pinned=node.pinned)
    srv = ssh.start(T, ["ib_write_bw", "-d", "mlx5_0"])
    assert srv.poll() is None
    done = srv.wait(10)
    assert done.ok and done.stdout == "Waiting for client" and srv.poll() == 0
    other = ssh.start(T, ["ib_write_bw"])
    other.kill()
    assert other.poll() is None and node.clients[1].get_transport().channel.closed
    assert other.wait(1).timed_out


def test_wait_for_ssh_waits_through_no_answer_then_returns_the_proved_key(tmp_path, node):
    ssh, clock = seam(tmp_path, node, pinned=node.pinned)
    fails = [ConnectionRefusedError(111, "Connection refused")] * 3
    real = node.client

    def client():
        c = real()
        c.node.fail = fails.pop() if fails else None
        return c

    ssh._client = client
    assert wait_for_ssh(ssh, T, 60, interval=2) == fingerprint(node.server_key.asbytes())
    assert len(node.clients) == 4 and clock.now == 6
    assert node.clients[-1].get_transport().channel.command == "true"


def test_wait_for_ssh_gives_up_at_its_deadline_and_refuses_another_key_at_once(tmp_path, node):
    node.fail = ConnectionRefusedError(111, "Connection refused")
    ssh, clock = seam(tmp_path, node, pinned=node.pinned)
    with pytest.raises(errors.SSHError, match=r"node n1 \(127.0.0.5:2222\) never came back: no SSH answer within "
                                              r"10s .*last error: SSHUnreachable") as exc:
        wait_for_ssh(ssh, T, 10, interval=1)
    assert clock.now == 10 and not exc.value.transient
    _, other = ed25519()
    node.fail = None
    ssh, clock = seam(tmp_path, node, pinned=other.pinned)
    with pytest.raises(errors.HostKeyMismatch):
        wait_for_ssh(ssh, T, 60)
    assert clock.now == 0  # never retried


def test_after_the_output_ends_the_wait_is_for_the_exit_status_not_a_busy_select():
    import threading
    from types import SimpleNamespace

    from bringup.remote.ssh import _select_wait
    chan = SimpleNamespace(eof_received=True, status_event=threading.Event())
    chan.status_event.set()
    _select_wait(chan, 30)  # returns at once: the status is there (a select would need a real channel)
