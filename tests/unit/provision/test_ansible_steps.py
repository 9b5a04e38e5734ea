"""The configure step's Ansible run (bringup.provision.ansible_steps.configure): one run of
playbooks/provision.yml, pin.yml then configure.yml, with the manifest's versions."""

from __future__ import annotations

import yaml

from bringup.provision import ansible_steps
from bringup.provision.image import load_manifest, pin_vars
from bringup.remote.ansible import PLAYBOOKS_DIR, HostResult, PlaybookResult, TaskFailure

DRIFT = ("versions differ from image ubuntu-2404-cuda128: driver (loaded kernel module): "
         "manifest says 570.133.20, node has 570.86.15")


def test_configure_is_one_run_pin_then_configure_and_keeps_each_node_outcome(monkeypatch):
    manifest = load_manifest("ubuntu-2404-cuda128")
    calls = []

    def fake_playbook(playbook, hosts, extravars, access, **kw):
        calls.append((playbook, sorted(hosts), dict(extravars), kw))
        return PlaybookResult(playbook, "failed", 2, {
            "a": HostResult("a", ok=True, ran=True, facts={"installed_driver": "570.133.20",
                                                           "pinned_image": manifest.name,
                                                           "configured_modules": ["nvidia"]}),
            "b": HostResult("b", ok=False, ran=True, facts={"installed_driver": "570.86.15"},
                            failures=[TaskFailure("Fail when the node differs from image", DRIFT)]),
        })

    monkeypatch.setattr(ansible_steps, "run_playbook", fake_playbook)
    hosts = {"a": {"address": "10.0.0.1"}, "b": {"address": "10.0.0.2"}}
    # an extra var naming a version the manifest sets: the manifest's is what is verified
    steps = ansible_steps.configure(hosts, manifest, access=None, timeout=60,
                                    extravars={"gpu_modules": ["nvidia"], "expected_driver": "1.0"})
    assert [c[0] for c in calls] == ["provision.yml"]
    _, names, extra, kw = calls[0]
    assert names == ["a", "b"] and kw["timeout"] == 60
    assert extra == {**pin_vars(manifest), "gpu_modules": ["nvidia"]}
    assert steps["a"].ok and steps["a"].facts["pinned_image"] == manifest.name
    assert steps["a"].facts["configured_modules"] == ["nvidia"]
    b = steps["b"]
    assert not b.ok and not b.unreachable and b.reason == f"Fail when the node differs from image: {DRIFT}"


def test_provision_yml_pins_before_it_configures():
    # Ansible leaves a host that failed a play out of the later plays: pinning must come first
    plays = yaml.safe_load((PLAYBOOKS_DIR / "provision.yml").read_text())
    assert [p["ansible.builtin.import_playbook"] for p in plays] == ["pin.yml", "configure.yml"]
    assert all((PLAYBOOKS_DIR / p["ansible.builtin.import_playbook"]).exists() for p in plays)
