"""The share step's Ansible run (bringup.provision.ansible_steps.run_sharing): the agent's
arguments and the device plugin's config handed to playbooks/sharing.yml, the document
brought back, and a node that drops off or leaves no document, or a garbled one."""

from __future__ import annotations

import base64
import io
import json
import shlex
import tarfile
from pathlib import Path

import pytest

from bringup.errors import AnsibleError, ParseError, SSHDropped
from bringup.provision import ansible_steps
from bringup.remote.ansible import HostResult, PlaybookResult


def installed(script: Path) -> bytes:
    """The archive an agent installer carries (its here-document, base64)."""
    text = script.read_text()
    body = text.split(f"<<'{ansible_steps.INSTALLER_END}'\n", 1)[1].split(f"\n{ansible_steps.INSTALLER_END}\n", 1)[0]
    return base64.b64decode(body)


def fake(monkeypatch, *, document: str | None, unreachable: bool = False) -> list:
    calls = []

    def play(playbook, hosts, extravars, access, **kw):
        calls.append((playbook, dict(extravars), kw))
        with tarfile.open(fileobj=io.BytesIO(installed(Path(extravars["sharing_installer"])))) as tar:
            calls.append(sorted(n for n in tar.getnames() if "/" not in n))
        if document is not None:
            (Path(extravars["sharing_fetch_dir"]) / "n1.json").write_text(document)
        return PlaybookResult(playbook, "ok", 0, {"n1": HostResult("n1", ok=not unreachable, ran=True,
                                                                    unreachable=unreachable)})
    monkeypatch.setattr(ansible_steps, "run_playbook", play)
    return calls


def test_the_geometry_and_config_go_to_the_playbook_and_the_document_comes_back(monkeypatch):
    calls = fake(monkeypatch, document='{"schema_version": 1, "gpus": []}')
    doc = ansible_steps.run_sharing("n1", {"address": "10.0.0.1"}, {"3g.71gb": 2}, '{"version": "v1"}', None,
                                    config_path="/etc/nvidia/k8s-device-plugin/config.yaml", timeout_s=90)
    assert doc == {"schema_version": 1, "gpus": []}
    playbook, extra, kw = calls[0]
    assert playbook == "sharing.yml" and kw["timeout"] == 210
    # the agent's arguments as the shell reads them: one JSON word after --mig
    assert shlex.split(extra["sharing_args"]) == ["--mig", '{"3g.71gb": 2}']
    assert extra["device_plugin_config"] == '{"version": "v1"}'
    assert extra["device_plugin_config_path"] == "/etc/nvidia/k8s-device-plugin/config.yaml"
    assert calls[1] == ["burnin"]                      # the agent, no plan beside it


def test_mig_off_is_its_own_argument(monkeypatch):
    calls = fake(monkeypatch, document="{}")
    ansible_steps.run_sharing("n1", {}, None, "{}", None, config_path="/x")
    assert calls[0][1]["sharing_args"] == "--mig-off"


@pytest.mark.parametrize("document, unreachable, error, words", [
    (None, True, SSHDropped, "dropped while setting GPU sharing"),
    (None, False, AnsibleError, "setting GPU sharing left no document"),
    ("{cut", False, ParseError, "not JSON"),
    (json.dumps([1]), False, ParseError, "not a JSON object"),
])
def test_what_is_not_a_document_is_an_error(monkeypatch, document, unreachable, error, words):
    fake(monkeypatch, document=document, unreachable=unreachable)
    with pytest.raises(error, match=words):
        ansible_steps.run_sharing("n1", {}, {"1g.18gb": 7}, "{}", None, config_path="/x")
