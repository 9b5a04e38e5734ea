"""How we log in to nodes (SshAccess, built from settings) and the one host-key policy as
the OpenSSH that Ansible (controller) and OpenMPI (first node) use receive it."""

from __future__ import annotations

import pytest
from ssh_fakes import client_key

from bringup.errors import ConfigError, SecretFileError
from bringup.fabric.mpirun import NodeSsh
from bringup.remote import ansible
from bringup.remote.access import SshAccess, Target, openssh_options
from bringup.settings import Settings

POLICY = ["IdentitiesOnly=yes", "GlobalKnownHostsFile=/dev/null", "StrictHostKeyChecking=yes", "BatchMode=yes"]


def _settings(tmp_path, **kw) -> Settings:
    return Settings(netbox_url="http://127.0.0.1:1", netbox_token_file=tmp_path / "t", **kw)


def test_access_comes_from_the_settings_with_our_key_checked(tmp_path):
    key = client_key(tmp_path)
    s = _settings(tmp_path, ssh_user="ops", ssh_port=2222, ssh_key_file=key, ssh_known_hosts=tmp_path / "kh")
    access = SshAccess.from_settings(s)
    assert (access.user, access.key_file, access.known_hosts, access.port) == ("ops", key, tmp_path / "kh", 2222)
    assert access.target("n1", "10.0.0.1") == Target("n1", "10.0.0.1", 2222)
    with pytest.raises(ConfigError, match="lack ssh_key_file or ssh_known_hosts"):
        SshAccess.from_settings(_settings(tmp_path, ssh_key_file=key))
    key.chmod(0o640)
    with pytest.raises(SecretFileError, match="0640"):
        SshAccess.from_settings(s)


def test_openssh_form_of_the_policy_pins_and_never_adds():
    opts = openssh_options("/k", "/kh", port=2222, user="root", connect_timeout=7)
    words = [opts[i + 1] for i, o in enumerate(opts) if o == "-o"]
    assert all(p in words for p in POLICY) and "UserKnownHostsFile=/kh" in words and "ConnectTimeout=7" in words
    assert opts[opts.index("-i") + 1] == "/k" and opts[opts.index("-p") + 1] == "2222" and opts[-2:] == ["-l", "root"]
    assert not any("accept-new" in w or w.endswith("=no") for w in words)
    assert "-p" not in openssh_options("/k", "/kh", port=22)


def test_ansible_and_openmpi_get_the_same_policy_as_the_seam(tmp_path):
    access = SshAccess("root", tmp_path / "id", tmp_path / "kh")
    env = ansible._envvars(tmp_path, tmp_path / "cp", access)
    rsh = NodeSsh("/root/.ssh/id_ed25519", "/etc/bringup/known_hosts").options()
    for p in POLICY:
        assert p in env["ANSIBLE_SSH_ARGS"].split() and p in rsh
    assert f"UserKnownHostsFile={tmp_path / 'kh'}" in env["ANSIBLE_SSH_ARGS"].split()
    assert env["ANSIBLE_PRIVATE_KEY_FILE"] == str(tmp_path / "id") and env["ANSIBLE_HOST_KEY_CHECKING"] == "True"
