"""The agent's runner without GPUs: plan validation, unknown checks, sysfs-driven checks."""

from pathlib import Path

import pytest

from burnin.runner import PlanError, exit_code, run_plan

REPO = Path(__file__).resolve().parents[3]


def sysfs(root: Path, ports: dict) -> None:
    for name, (state, rate) in ports.items():
        p = root / "sys/class/infiniband" / name / "ports" / "1"
        p.mkdir(parents=True)
        (p / "state").write_text(state + "\n")
        (p / "rate").write_text(rate + "\n")


def test_network_check_from_a_sysfs_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no ibstat here: sysfs alone must do
    sysfs(tmp_path, {"mlx5_0": ("4: ACTIVE", "400 Gb/sec (4X NDR)"), "mlx5_1": ("1: DOWN", "10 Gb/sec (4X SDR)"),
                     "mlx5_2": ("4: ACTIVE", "200 Gb/sec (4X HDR)")})
    doc = run_plan({"schema_version": 1, "checks": ["network", "no_such_check"], "sysfs_root": str(tmp_path),
                    "expect": {"ib_ports": 3, "ib_rate_gbps": 400}})
    net, bogus = doc["checks"]
    assert net["status"] == "fail"
    assert [f["code"] for f in net["findings"]] == ["ib_port_down", "ib_rate_low"]
    assert net["metrics"]["ports_down"] == 1 and net["metrics"]["min_rate_gbps"] == 10.0
    assert bogus["status"] == "error" and bogus["findings"][0]["code"] == "unknown_check"
    assert doc["summary"]["status"] == "fail" and exit_code(doc) == 1
    assert doc["nvml"]["available"] is False  # no GPU check asked for: NVML never loaded


def test_host_without_ib_is_unsupported_and_not_a_pass(tmp_path):
    doc = run_plan({"schema_version": 1, "checks": ["network"], "sysfs_root": str(tmp_path)})
    assert doc["checks"][0]["status"] == "unsupported"
    assert doc["summary"]["status"] == "incomplete" and exit_code(doc) == 3


@pytest.mark.parametrize("plan", [{}, {"schema_version": 1}, {"schema_version": 1, "checks": []},
                                  {"schema_version": 9, "checks": ["xid"]}, []])
def test_bad_plans_refused(plan):
    with pytest.raises(PlanError):
        run_plan(plan)






def test_document_is_handed_over_before_and_after_every_check(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    sysfs(tmp_path, {"mlx5_0": ("4: ACTIVE", "400 Gb/sec (4X NDR)")})
    seen = []
    doc = run_plan({"schema_version": 1, "checks": ["network", "no_such_check"], "sysfs_root": str(tmp_path),
                    "expect": {"ib_ports": 1, "ib_rate_gbps": 400}}, on_update=seen.append)
    first, before_net, after_net, before_bogus, after_bogus = seen
    assert first["partial"] and first["running"] is None and first["pending"] == ["network", "no_such_check"]
    assert first["summary"]["status"] == "incomplete" and first["summary"]["unfinished"] == "network"
    assert before_net["running"] == "network" and before_net["checks"] == []
    assert after_net["running"] is None and [c["name"] for c in after_net["checks"]] == ["network"]
    assert before_bogus["running"] == "no_such_check" and before_bogus["pending"] == []
    assert after_bogus["partial"] and len(after_bogus["checks"]) == 2
    assert doc["partial"] is False and doc["running"] is None and doc["finished"]
    assert doc["summary"]["status"] == "fail" and "unfinished" not in doc["summary"]
