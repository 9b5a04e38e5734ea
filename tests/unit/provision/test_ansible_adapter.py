"""The ansible-runner adapter's reading of runner events (recorded shapes of real events)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bringup.errors import ConfigError
from bringup.remote.access import SshAccess
from bringup.remote.ansible import _collect, _envvars, _inventory, _message, run_playbook


def ev(kind, host, task, res, **extra):
    return {"event": kind, "event_data": {"host": host, "task": task, "res": res, **extra}}


def runner(events, stats, rc=2, status="failed"):
    return SimpleNamespace(events=events, stats=stats, rc=rc, status=status)


def test_collect_per_host_outcome():
    events = [
        {"event": "playbook_on_start", "event_data": {}},
        ev("runner_on_ok", "a", "Remember the node's root folder", {"ansible_facts": {"node_root": "/"}}),
        ev("runner_on_ok", "b", "Remember the node's root folder", {"ansible_facts": {"node_root": "/x"}}),
        ev("runner_on_failed", "b", "probe", {"msg": "ignored"}, ignore_errors=True),
        ev("runner_on_failed", "b", "Fail when the node differs",
           {"msg": "versions differ: driver: manifest says 570.133.20, node has 570.86.15"}),
        ev("runner_on_unreachable", "c", "Run the agent",
           {"msg": "Failed to connect to the host via ssh: Connection reset", "unreachable": True}),
    ]
    stats = {"ok": {"a": 3, "b": 1}, "failures": {"b": 1}, "dark": {"c": 1}}
    res = _collect("pin.yml", runner(events, stats), {"a": {}, "b": {}, "c": {}, "d": {}})
    assert res.hosts["a"].ok and res.hosts["a"].facts == {"node_root": "/"}
    b = res.hosts["b"]
    assert not b.ok and len(b.failures) == 1  # the ignored failure is not one
    assert "manifest says 570.133.20, node has 570.86.15" in b.reason()
    c = res.hosts["c"]
    assert not c.ok and c.unreachable and "Connection reset" in c.reason()
    d = res.hosts["d"]
    assert not d.ok and d.reason() == "the play did not run on this host"
    assert not res.ok and set(res.failed()) == {"b", "c", "d"}


def test_message_keeps_msg_stderr_and_rc():
    msg = _message({"msg": "non-zero return code", "stderr": "x" * 3000 + "boom", "rc": 2})
    assert msg.startswith("non-zero return code | stderr: ")
    assert msg.endswith("boom | rc=2")
    assert len(msg) < 1600
    assert _message({}) == "failed without a message"


def test_envvars_keep_host_key_checking_on_with_our_known_hosts(tmp_path):
    access = SshAccess("root", tmp_path / "id", tmp_path / "kh")
    env = _envvars(tmp_path, tmp_path / "cp", access)
    assert env["ANSIBLE_HOST_KEY_CHECKING"] == "True"
    assert f"UserKnownHostsFile={tmp_path / 'kh'}" in env["ANSIBLE_SSH_ARGS"]
    assert "StrictHostKeyChecking=yes" in env["ANSIBLE_SSH_ARGS"]
    for var in ("ANSIBLE_HOME", "ANSIBLE_LOCAL_TEMP", "ANSIBLE_REMOTE_TEMP"):
        assert env[var].startswith(str(tmp_path))
    inv = _inventory({"n1": {"address": "127.0.0.9", "port": 2222}}, access)
    assert inv["all"]["hosts"]["n1"] == {"ansible_host": "127.0.0.9", "ansible_port": 2222, "ansible_user": "root"}
    with pytest.raises(ConfigError, match="no address"):
        _inventory({"n1": {"port": 22}}, access)


def test_run_playbook_refuses_missing_inputs(tmp_path):
    access = SshAccess("root", tmp_path / "missing-key", tmp_path / "kh")
    with pytest.raises(ConfigError, match="no playbook"):
        run_playbook("nope.yml", {"a": {"address": "127.0.0.1"}}, {}, access)
    with pytest.raises(ConfigError, match="missing-key does not exist"):
        run_playbook("pin.yml", {"a": {"address": "127.0.0.1"}}, {}, access)


def test_collect_reads_a_recorded_real_run():
    import json
    from pathlib import Path
    rec = json.loads((Path(__file__).parents[2] / "fixtures/ansible-runner/pin-ok-drift-down.json").read_text())
    res = _collect("pin.yml", runner(rec["events"], rec["stats"], rec["rc"], rec["status"]),
                   {"ok": {}, "drift": {}, "down": {}})
    assert res.hosts["ok"].ok and res.hosts["ok"].facts["installed_driver"] == "570.133.20"
    drift = res.hosts["drift"]
    assert not drift.ok and not drift.unreachable
    assert "driver (loaded kernel module): manifest says 570.133.20, node has 570.86.15" in drift.reason()
    down = res.hosts["down"]
    assert down.unreachable and "Connection refused" in down.reason()
    assert set(res.failed()) == {"drift", "down"}
