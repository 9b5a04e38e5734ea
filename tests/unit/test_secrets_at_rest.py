"""Secrets at rest: every secret file is 0600 and checked where it is read; Ansible's
run folders (extra vars may hold a bootstrap token) live in a private folder, and a
killed controller's leftovers are removed at the next start."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from bringup.errors import ControllerFault, SecretFileError
from bringup.remote import ansible
from bringup.remote.access import SshAccess
from bringup.settings import Settings


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def _dead_pid() -> int:
    pid = 4_194_304 + 17  # above the kernel's largest pid_max: never a live process
    assert not ansible.pid_alive(pid)
    return pid


def test_kube_state_snapshot_is_0600_even_when_it_was_0644(tmp_path):
    from lab.kubeapi.store import Store
    snap = tmp_path / "state.json"
    snap.write_text('{"resourceVersion": 1, "objects": []}')
    snap.chmod(0o644)
    store = Store(snap)
    store.save()
    assert _mode(snap) == 0o600
    Store(tmp_path / "fresh.json").save()
    assert _mode(tmp_path / "fresh.json") == 0o600


def _settings(token: Path) -> Settings:
    return Settings(netbox_url="http://127.0.0.1:1", netbox_token_file=token)


def test_netbox_token_file_readable_by_others_is_refused(tmp_path):
    tok = tmp_path / "netbox-token"
    tok.write_text("s3cr3t-token\n")
    tok.chmod(0o644)
    with pytest.raises(SecretFileError, match="0644") as err:
        _settings(tok).netbox_token()
    assert isinstance(err.value, ControllerFault)
    assert "chmod 600" in str(err.value) and "s3cr3t" not in str(err.value)
    tok.chmod(0o600)
    assert _settings(tok).netbox_token() == "s3cr3t-token"
    with pytest.raises(SecretFileError, match="cannot read"):
        _settings(tmp_path / "missing").netbox_token()


def test_run_folders_are_private_and_named_after_the_controller(tmp_path):
    root = tmp_path / "runner"
    d = ansible.private_run_dir(root)
    assert d.parent == root and d.name.startswith(f"{os.getpid()}-")
    assert _mode(root) == 0o700 and _mode(d) == 0o700


def test_leftovers_of_a_dead_controller_are_removed_live_ones_kept(tmp_path):
    root = tmp_path / "runner"
    dead = root / f"{_dead_pid()}-abc"
    live = root / f"{os.getppid()}-def"
    (dead / "runner" / "env").mkdir(parents=True)
    (dead / "runner" / "env" / "extravars").write_text("join_token: abcdef.0123456789abcdef\n")
    live.mkdir()
    new = ansible.private_run_dir(root)
    assert not dead.exists() and live.exists() and new.exists()


def test_run_playbook_puts_extravars_in_the_private_folder_not_the_system_temp(tmp_path, monkeypatch):
    monkeypatch.setenv("BRINGUP_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(ansible, "_path", lambda: "/usr/bin")
    seen = {}

    def fake_run(**kw):
        seen.update(kw)
        return SimpleNamespace(events=[], stats={}, rc=0, status="successful")

    import ansible_runner
    monkeypatch.setattr(ansible_runner, "run", fake_run)
    (tmp_path / "id").write_text("key")
    (tmp_path / "kh").write_text("")
    access = SshAccess("root", tmp_path / "id", tmp_path / "kh")
    ansible.run_playbook("pin.yml", {"a": {"address": "127.0.0.1"}}, {"join_token": "x"}, access)
    pdd = Path(seen["private_data_dir"])
    assert pdd.is_relative_to(tmp_path / "state" / "runner")
    for var in ("ANSIBLE_LOCAL_TEMP", "ANSIBLE_REMOTE_TEMP", "ANSIBLE_HOME"):
        assert Path(seen["envvars"][var]).is_relative_to(tmp_path / "state" / "runner")
    assert not pdd.exists()  # removed after the run
