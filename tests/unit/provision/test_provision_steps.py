"""Provisioning steps against a recording BMC double: order of Redfish calls, BIOS
read-back failures, media ejected after the wait even when the node never returns."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bringup.errors import SSHError
from bringup.provision.ansible_steps import pack_agent
from bringup.provision.image import load_manifest
from bringup.provision.redfish_steps import apply_bios_profile, install_os
from bringup.redfish.models import BiosResult


class RecordingBmc:
    """Records calls; BIOS keeps the attributes listed in ``sticky_fail`` at their old value."""

    def __init__(self, power_state="On", bios=None, sticky_fail=()):
        self.calls: list[tuple] = []
        self.state = power_state
        self.bios = dict(bios or {})
        self.sticky_fail = set(sticky_fail)

    def system(self):
        return SimpleNamespace(PowerState=self.state)

    def apply_bios(self, wanted, reboot=True, timeout=300.0):
        self.calls.append(("apply_bios", dict(wanted), reboot))
        for k, v in wanted.items():
            if k not in self.sticky_fail:
                self.bios[k] = v
        not_applied = {k: (v, self.bios.get(k)) for k, v in wanted.items() if self.bios.get(k) != v}
        return BiosResult(wanted=wanted, observed=dict(self.bios), not_applied=not_applied, rebooted=reboot)

    def insert_media(self, image_url, timeout=120.0):
        self.calls.append(("insert_media", image_url))

    def set_boot_once(self, target):
        self.calls.append(("set_boot_once", target))

    def power(self, action, wait=True, timeout=120.0):
        self.calls.append(("power", action))
        self.state = "On"
        return "On"

    def eject_media(self):
        self.calls.append(("eject_media",))


def test_bios_profile_applied():
    bmc = RecordingBmc(bios={"SriovGlobalEnable": "Disabled", "BootMode": "Uefi"})
    res = apply_bios_profile(bmc, {"SriovGlobalEnable": "Enabled", "BootMode": "Uefi"})
    assert res.ok and res.observed["SriovGlobalEnable"] == "Enabled"
    assert bmc.calls[0][0] == "apply_bios" and bmc.calls[0][2] is True


def test_bios_setting_that_did_not_take_is_a_result_naming_wanted_and_observed():
    bmc = RecordingBmc(bios={"IommuSupport": "Enabled", "BootMode": "Uefi"}, sticky_fail={"IommuSupport"})
    res = apply_bios_profile(bmc, {"IommuSupport": "Disabled", "BootMode": "Uefi"})
    assert not res.ok
    assert res.not_applied == {"IommuSupport": ("Disabled", "Enabled")}


@pytest.mark.parametrize("state,action", [("On", "ForceRestart"), ("Off", "On")])
def test_install_os_boots_once_from_cd_then_ejects_after_wait(state, action):
    m = load_manifest("ubuntu-2404-cuda128")
    bmc = RecordingBmc(power_state=state)
    seen_during_wait = []
    res = install_os(bmc, m, wait=lambda: seen_during_wait.append(list(bmc.calls)) or "SHA256:x")
    assert bmc.calls == [("insert_media", m.iso.url), ("set_boot_once", "Cd"), ("power", action), ("eject_media",)]
    # the media was still in while we waited for the node
    assert ("eject_media",) not in seen_during_wait[0]
    assert res.waited == "SHA256:x" and res.ejected and res.power_action == action


def test_install_os_ejects_even_when_the_node_never_returns():
    m = load_manifest("ubuntu-2404-cuda128")
    bmc = RecordingBmc()

    def never():
        raise SSHError("node x never came back")

    with pytest.raises(SSHError, match="never came back"):
        install_os(bmc, m, "http://mirror.invalid/u.iso", wait=never)
    assert bmc.calls[0] == ("insert_media", "http://mirror.invalid/u.iso")
    assert bmc.calls[-1] == ("eject_media",)


def test_install_os_without_wait_leaves_the_media_in():
    bmc = RecordingBmc()
    res = install_os(bmc, load_manifest("ubuntu-2404-cuda128"))
    assert ("eject_media",) not in bmc.calls and not res.ejected


def test_pack_agent_leaves_caches_out(tmp_path):
    import tarfile
    agent = tmp_path / "burnin"
    (agent / "__pycache__").mkdir(parents=True)
    (agent / "__main__.py").write_text("print('x')\n")
    (agent / "__pycache__" / "m.cpython-312.pyc").write_bytes(b"\0")
    archive = pack_agent(agent, tmp_path)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "burnin/__main__.py" in names
    assert not any("__pycache__" in n for n in names)


def test_the_agent_installer_carries_the_archive_and_unpacks_it_into_its_argument(tmp_path):
    """burnin.yml and sharing.yml send the installer with ansible.builtin.script (no module
    run on the node): a shell script whose here-document is the archive, byte for byte, and
    which unpacks it into the folder it is given."""
    import base64

    from bringup.provision.ansible_steps import INSTALLER_END, agent_installer
    agent = tmp_path / "burnin"
    agent.mkdir()
    (agent / "__main__.py").write_text("print('x')\n")
    archive = pack_agent(agent, tmp_path, {"checks": ["ecc"]})
    script = agent_installer(archive)
    assert script.parent == archive.parent and script.name == "burnin-install.sh"
    lines = script.read_text().splitlines()
    assert lines[0] == "#!/bin/sh" and "set -eu" in lines and 'cd "$1"' in lines
    start = lines.index(f"base64 -d > .bringup-agent.tar.gz <<'{INSTALLER_END}'")
    end = lines.index(INSTALLER_END)
    assert base64.b64decode("".join(lines[start + 1:end])) == archive.read_bytes()
    assert lines[end + 1:] == ["tar -xzf .bringup-agent.tar.gz --no-same-owner", "rm -f .bringup-agent.tar.gz"]


def test_pack_agent_carries_the_plan_beside_the_package(tmp_path):
    """burnin.yml moves plan.json from the archive to the node's work folder: the plan is
    in the archive, readable, and the package still unpacks under burnin/."""
    import json
    import tarfile
    agent = tmp_path / "burnin"
    agent.mkdir()
    (agent / "__main__.py").write_text("print('x')\n")
    plan = {"schema_version": 1, "checks": ["inventory", "ecc"], "budget_s": 120}
    archive = pack_agent(agent, tmp_path, plan)
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == ["burnin", "burnin/__main__.py", "plan.json"]
        member = tar.getmember("plan.json")
        assert member.mode == 0o644
        assert json.loads(tar.extractfile(member).read()) == plan
    without = pack_agent(agent, tmp_path)
    with tarfile.open(without) as tar:
        assert "plan.json" not in tar.getnames()


def test_a_node_that_never_returns_is_reported_with_the_whole_wait_not_the_last_slice():
    """Seen on the fault suite: "no SSH answer within 0s" for a node waited on for 300 s."""
    m = load_manifest("ubuntu-2404-cuda128")
    bmc = RecordingBmc()
    bmc.log_marker = lambda: set()
    bmc.boot_failure = lambda marker: None

    def ssh_wait(seconds):
        raise SSHError(f"node x never came back: no SSH answer within {seconds:.0f}s after the install",
                       hint="check the console")

    with pytest.raises(SSHError) as err:
        install_os(bmc, m, "http://mirror.invalid/u.iso", ssh_wait=ssh_wait, wait_timeout=1.6, poll=1.2)
    assert "no SSH answer within 2s after" in str(err.value)
    assert str(err.value).count("check the console") == 1
