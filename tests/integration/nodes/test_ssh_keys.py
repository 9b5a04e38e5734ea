"""Host key helpers: fingerprints as ssh-keygen prints them; expected keys from known_hosts."""

from __future__ import annotations

import subprocess

import pytest

pytestmark = pytest.mark.integration

from bringup.errors import ConfigError
from bringup.remote.ssh import expected_host_key, fingerprint, parse_public_key


@pytest.fixture
def host_key(tmp_path):
    key = tmp_path / "hk"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key


def test_fingerprint_matches_ssh_keygen(host_key):
    pub = (host_key.parent / "hk.pub").read_text()
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(host_key) + ".pub"],
                         capture_output=True, text=True, check=True).stdout
    _, blob = parse_public_key(pub)
    assert fingerprint(blob) == out.split()[1]


def test_expected_key_from_plain_and_hashed_known_hosts(tmp_path, host_key):
    pub = " ".join((host_key.parent / "hk.pub").read_text().split()[:2])
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.5]:2222 {pub}\n")
    assert expected_host_key(kh, "127.0.0.5", 2222) == pub
    # hashed the way `ssh-keygen -H` writes it
    subprocess.run(["ssh-keygen", "-H", "-f", str(kh)], check=True, capture_output=True)
    assert kh.read_text().startswith("|1|")
    assert expected_host_key(kh, "127.0.0.5", 2222) == pub
    with pytest.raises(ConfigError, match=r"has no host key for \[127.0.0.6\]:2222"):
        expected_host_key(kh, "127.0.0.6", 2222)


def test_parse_public_key_refuses_garbage():
    with pytest.raises(ConfigError):
        parse_public_key("ssh-ed25519")
    with pytest.raises(ConfigError, match="not valid base64"):
        parse_public_key("ssh-ed25519 !!!notbase64")
