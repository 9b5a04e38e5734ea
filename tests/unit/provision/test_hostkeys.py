"""Host keys bringup makes for nodes, and pinning them in known_hosts."""

from __future__ import annotations

import threading

import paramiko
import pytest

from bringup.errors import ConfigError
from bringup.provision import hostkeys
from bringup.remote.access import expected_host_key


def test_generated_pair_matches_and_repr_hides_the_private_half():
    k = hostkeys.generate("root@n1")
    assert k.public.startswith("ssh-ed25519 ") and k.public.endswith(" root@n1")
    assert k.private.startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert hostkeys.public_of(k.private) == k.pinned
    assert "PRIVATE" not in repr(k)
    # OpenSSH's own format: paramiko (as sshd would) loads it
    assert paramiko.Ed25519Key.from_private_key(__import__("io").StringIO(k.private)).get_base64() in k.public
    assert hostkeys.generate("x").pinned != k.pinned


def test_only_ed25519_keys_are_pinned():
    with pytest.raises(ConfigError, match="ssh-rsa where bringup pins ssh-ed25519"):
        hostkeys.pinned_form("ssh-rsa AAAAB3NzaC1yc2E= x")


def test_pin_replaces_only_that_hosts_entry(tmp_path):
    kh = tmp_path / "known_hosts"
    a, b, c = (hostkeys.generate(str(i)) for i in range(3))
    assert hostkeys.pin(kh, "127.0.0.5", 2222, a.public)
    assert hostkeys.pin(kh, "127.0.0.6", 22, b.public)
    assert not hostkeys.pin(kh, "127.0.0.6", 22, b.public)   # unchanged: not rewritten
    assert hostkeys.pin(kh, "127.0.0.5", 2222, c.public)     # a reinstall's new key
    assert expected_host_key(kh, "127.0.0.5", 2222) == c.pinned
    assert expected_host_key(kh, "127.0.0.6", 22) == b.pinned
    assert len(kh.read_text().splitlines()) == 2
    assert kh.stat().st_mode & 0o777 == 0o600


def test_known_hosts_is_never_seen_half_written_while_installs_pin(tmp_path):
    kh = tmp_path / "known_hosts"
    keys = [hostkeys.generate(str(i)) for i in range(6)]
    for i, k in enumerate(keys):
        hostkeys.pin(kh, f"127.67.0.{i + 1}", 2222, k.public)
    new = hostkeys.generate("reinstalled")
    stop, seen = threading.Event(), []

    def read() -> None:
        while not stop.is_set():
            seen.append(len(kh.read_text().splitlines()))

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=lambda i=i, k=k: [hostkeys.pin(kh, f"127.67.0.{i + 1}", 2222,
                                                                       (new if i == 0 else k).public)
                                                         for _ in range(20)])
               for i, k in enumerate(keys)]
    [w.start() for w in writers]
    [w.join(60) for w in writers]
    stop.set()
    reader.join(10)
    assert seen and set(seen) == {6}          # every read saw every host, never a torn file
    assert expected_host_key(kh, "127.67.0.1", 2222) == new.pinned
