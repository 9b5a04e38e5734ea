"""ansible-runner against the real sshd of simulated nodes: pin.yml, configure.yml (alone, and
after pin.yml in one run: provision.yml), host key checking, secrets kept out of results."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.provision import ansible_steps
from bringup.provision.ansible_steps import configure, pin_versions
from bringup.provision.image import pin_vars
from bringup.remote.access import SshAccess
from bringup.remote.ansible import run_playbook
from lab.nodes.sshd import NodeDir

pytestmark = pytest.mark.integration


def test_pin_passes_on_a_healthy_node_and_fails_on_driver_drift_with_both_versions(node_lab):
    hosts = {n: node_lab.host(n) for n in ("ok", "drift")}
    steps = pin_versions(hosts, node_lab.manifest, node_lab.access)
    ok, drift = steps["ok"], steps["drift"]
    assert ok.ok, ok.reason
    assert ok.facts["installed_driver"] == "570.133.20" and ok.facts["pin_mismatches"] == []
    assert not drift.ok and not drift.unreachable
    assert "driver (loaded kernel module): manifest says 570.133.20, node has 570.86.15" in drift.reason
    assert ("nvidia-driver-570-server (driver): manifest says 570.133.20-0ubuntu0.24.04.1, "
            "node has 570.86.15-0ubuntu0.24.04.1") in drift.reason
    # NCCL was not drifted on that node, so it is not blamed
    assert "libnccl2" not in drift.reason
    # pinning left APT preferences and holds on the node
    root = NodeDir(node_lab.home, "ok").root
    pref = (root / "etc/apt/preferences.d/bringup-ubuntu-2404-cuda128.pref").read_text()
    assert "Package: libnccl2\nPin: version 2.26.2-1+cuda12.8\nPin-Priority: 1001" in pref


def test_pin_follows_the_manifest_not_the_node(node_lab):
    # a manifest asking for another NCCL makes the healthy node fail, naming both versions
    m = node_lab.manifest.model_copy(deep=True)
    extra = pin_vars(m)
    extra["expected_packages"]["libnccl2"]["version"] = "2.27.3-1+cuda12.8"
    res = run_playbook("pin.yml", {"ok": node_lab.host("ok")}, extra, node_lab.access)
    assert not res.ok
    assert "libnccl2 (nccl): manifest says 2.27.3-1+cuda12.8, node has 2.26.2-1+cuda12.8" in res.hosts["ok"].reason()


def test_configure_writes_persistence_sysctl_and_modules_under_the_node_root(node_lab, monkeypatch):
    runs = []
    real = ansible_steps.run_playbook
    monkeypatch.setattr(ansible_steps, "run_playbook", lambda pb, *a, **kw: runs.append(pb) or real(pb, *a, **kw))
    hosts = {n: node_lab.host(n) for n in ("ok", "drift", "never")}
    steps = configure(hosts, node_lab.manifest, node_lab.access, extravars={"gpu_modules": ["nvidia", "nvidia_uvm"]})
    assert runs == ["provision.yml"]  # pin and configure in one ansible-playbook run
    ok, drift, never = steps["ok"], steps["drift"], steps["never"]
    assert ok.ok, ok.reason
    # the facts of both plays, as the step's evidence shows them
    assert ok.facts["installed_driver"] == "570.133.20" and ok.facts["pinned_image"] == "ubuntu-2404-cuda128"
    assert ok.facts["configured_modules"] == ["nvidia", "nvidia_uvm"]
    assert ok.facts["configured_sysctl"]["kernel.numa_balancing"] == 0
    # never configured past a failed pin: pin.yml's reason with both versions, no configure facts
    assert not drift.ok and not drift.unreachable
    assert drift.reason.startswith("Fail when the node differs from image ubuntu-2404-cuda128: "
                                   "versions differ from image ubuntu-2404-cuda128: "), drift.reason
    assert "driver (loaded kernel module): manifest says 570.133.20, node has 570.86.15" in drift.reason
    assert drift.facts["installed_driver"] == "570.86.15" and "pinned_image" not in drift.facts
    assert "configured_modules" not in drift.facts
    assert not (NodeDir(node_lab.home, "drift").root / "etc/sysctl.d/90-bringup-gpu.conf").exists()
    assert not never.ok and never.unreachable
    root = NodeDir(node_lab.home, "ok").root
    assert "kernel.numa_balancing = 0" in (root / "etc/sysctl.d/90-bringup-gpu.conf").read_text()
    assert (root / "etc/modules-load.d/bringup-gpu.conf").read_text().split("\n")[1:3] == ["nvidia", "nvidia_uvm"]
    link = root / "etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service"
    assert link.is_symlink() and str(link.readlink()) == "/lib/systemd/system/nvidia-persistenced.service"
    # nothing escaped to the real /etc of this machine
    assert not Path("/etc/sysctl.d/90-bringup-gpu.conf").exists()


def test_configure_yml_runs_on_its_own(node_lab):
    # outside provision.yml nothing set node_root before: configure.yml finds it itself
    res = run_playbook("configure.yml", {"ok": node_lab.host("ok")}, {}, node_lab.access)
    assert res.ok, res.hosts["ok"].reason()
    assert res.hosts["ok"].facts["node_root"] == str(NodeDir(node_lab.home, "ok").root)


def test_a_node_with_an_unexpected_host_key_is_unreachable(node_lab, tmp_path):
    # known_hosts that pins another node's key for "ok"
    ok, drift = node_lab.fleet.node("ok"), node_lab.fleet.node("drift")
    lines = node_lab.access.known_hosts.read_text().splitlines()
    drift_key = next(ln for ln in lines if ln.startswith(f"[{drift.address}]")).split(None, 1)[1]
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[{ok.address}]:{ok.ssh_port} {drift_key}\n")
    access = SshAccess(node_lab.access.user, node_lab.access.key_file, kh)
    steps = pin_versions({"ok": node_lab.host("ok")}, node_lab.manifest, access)
    assert not steps["ok"].ok and steps["ok"].unreachable
    assert "Host key verification failed" in steps["ok"].reason


def test_no_log_secrets_never_reach_the_result(node_lab, tmp_path):
    (tmp_path / "leak.yml").write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - name: use a secret\n      ansible.builtin.command: 'false {{ join_token }}'\n      no_log: true\n")
    secret = "abcdef.0123456789abcdef"
    res = run_playbook("leak.yml", {"ok": node_lab.host("ok")}, {"join_token": secret}, node_lab.access,
                       playbooks_dir=tmp_path)
    assert not res.ok
    assert "no_log" in res.hosts["ok"].reason()
    assert secret not in repr(res)


#: a play that writes one file through tasks/write_file.yml and says whether it changed it
_WRITE = """\
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.import_tasks: tasks/sysroot.yml
    - ansible.builtin.import_tasks: tasks/write_file.yml
      vars:
        file_path: "{{ node_root }}/etc/bringup-write-test.conf"
        file_text: "{{ text }}"
    - ansible.builtin.set_fact:
        wrote: "{{ written.changed }}"
"""


def test_a_file_written_through_raw_is_written_whole_and_changed_only_when_it_differs(node_lab, tmp_path):
    """tasks/write_file.yml (the playbooks' files, without the copy module's two module runs
    on the node): the text byte for byte whatever its quotes, mode 644, a change reported
    only when the text or the mode differed, as the copy module reports it."""
    (tmp_path / "tasks").symlink_to(Path(ansible_steps.__file__).resolve().parents[2] / "playbooks" / "tasks")
    (tmp_path / "write.yml").write_text(_WRITE)
    path = NodeDir(node_lab.home, "ok").root / "etc/bringup-write-test.conf"
    path.unlink(missing_ok=True)

    def write(text: str) -> bool:
        res = run_playbook("write.yml", {"ok": node_lab.host("ok")}, {"text": text}, node_lab.access,
                           playbooks_dir=tmp_path)
        assert res.ok, res.hosts["ok"].reason()
        return res.hosts["ok"].facts["wrote"]

    text = "# it's \"quoted\", $HOME stays, %s and \\n stay\nkey = value\n\n"
    assert write(text) is True
    assert path.read_text() == text and (path.stat().st_mode & 0o777) == 0o644
    assert write(text) is False                       # the same text: nothing to do
    path.chmod(0o600)
    assert write(text) is True and (path.stat().st_mode & 0o777) == 0o644
    assert write("key = other\n") is True and path.read_text() == "key = other\n"
    assert not list(path.parent.glob("*.bringup-new"))
