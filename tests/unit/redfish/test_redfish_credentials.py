"""Loading the BMC credentials file."""

from __future__ import annotations

import pytest

from bringup.errors import ConfigError
from bringup.redfish.credentials import load_credentials


def write(tmp_path, text, mode=0o600):
    p = tmp_path / "bmc.yaml"
    p.write_text(text)
    p.chmod(mode)
    return p


def test_address_entry_then_default(tmp_path):
    creds = load_credentials(write(tmp_path, "default: {username: admin, password: a}\n"
                                             "10.0.0.5: {username: root, password: b}\n"))
    assert creds("10.0.0.5").username == "root" and creds("10.0.0.5").password == "b"
    assert creds("10.0.0.6").username == "admin"


def test_missing_entry_without_default(tmp_path):
    creds = load_credentials(write(tmp_path, "10.0.0.5: {username: root, password: b}\n"))
    with pytest.raises(ConfigError, match="no BMC credentials for 10.0.0.9"):
        creds("10.0.0.9")


def test_world_readable_file_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="chmod 600"):
        load_credentials(write(tmp_path, "default: {username: a, password: b}\n", 0o644))


def test_incomplete_entry_names_the_line(tmp_path):
    with pytest.raises(ConfigError, match=r"bmc.yaml:2: entry 'x'"):
        load_credentials(write(tmp_path, "default: {username: a, password: b}\nx: {username: c}\n"))
