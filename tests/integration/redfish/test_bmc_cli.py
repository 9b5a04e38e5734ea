"""``bringup bmc inventory`` against the simulator: JSON, exit codes, the password file rule."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from bringup_cli import app
from lab.bmcsim import hardware

# the session's BMC simulator (redfish/conftest.py) answers on fixed addresses: one worker runs its tests
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("bmcsim")]


@pytest.fixture
def password_file(bmcsim, tmp_path):
    p = tmp_path / "bmc.pw"
    p.write_text(bmcsim.creds.password + "\n")
    p.chmod(0o600)
    return p


def run(*args):
    return CliRunner().invoke(app, ["bmc", "inventory", *args])


def test_json_inventory_of_an_hgx_bmc(bmcsim, password_file):
    node = bmcsim.node("hgx")
    r = run(f"https://{node.bmc_address}:8443", "--user", bmcsim.creds.username, "--password-file",
            str(password_file), "--ca", bmcsim.ca, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["system"]["serial"] == node.serial and len(doc["systems"]) == 2
    assert sorted(g["serial"] for g in doc["gpus"]) == sorted(hardware.gpu_serial(node, i) for i in range(8))
    assert all(g["memory_mib"] == bmcsim.skus[node.sku].gpu.memory_mib and g["model"] for g in doc["gpus"])
    assert {n["mac"] for n in doc["nics"]} >= {node.mac_of(f"cx{i}") for i in range(8)}
    assert all(set(n) >= {"name", "mac"} for n in doc["nics"]) and len(doc["cpus"]) == 2
    assert doc["unavailable"] == []


def test_a_partial_inventory_still_exits_0_and_names_the_gaps(bmcsim, password_file):
    node = bmcsim.node("member-404")
    r = run(f"https://{node.bmc_address}:8443", "--user", bmcsim.creds.username, "--password-file",
            str(password_file), "--ca", bmcsim.ca, "--json")
    assert r.exit_code == 0, r.output
    gone = {u["uri"] for u in json.loads(r.output)["unavailable"]}
    assert "/redfish/v1/Systems/1/Processors/GPU4" in gone


def test_auth_failure_is_exit_2_with_one_line(bmcsim, tmp_path):
    bad = tmp_path / "wrong.pw"
    bad.write_text("not-the-password")
    bad.chmod(0o600)
    node = bmcsim.node("ok-1")
    cmd = [sys.executable, "-c", "from bringup_cli import main; main()", "bmc", "inventory",
           f"https://{node.bmc_address}:8443", "--user", bmcsim.creds.username, "--password-file", str(bad),
           "--ca", bmcsim.ca]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused our credentials" in lines[0] and "not-the-password" not in proc.stderr


def test_unreachable_bmc_is_exit_2(bmcsim, password_file):
    r = run("https://127.61.9.9:8443", "--user", "admin", "--password-file", str(password_file), "--insecure",
            "--timeout", "1")
    assert r.exit_code == 2 and "cannot reach" in r.output


def test_a_password_file_others_can_read_is_refused(bmcsim, password_file):
    password_file.chmod(0o644)
    node = bmcsim.node("ok-1")
    r = run(f"https://{node.bmc_address}:8443", "--user", "admin", "--password-file", str(password_file),
            "--ca", bmcsim.ca)
    assert r.exit_code == 2 and "must be 0600" in r.output and "chmod 600" in r.output
