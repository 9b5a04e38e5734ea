"""The simulated GPUs' profiles (pure functions of lab.gpu.profile): the serials NVML
reports are the BMC simulator's, and the burn-in fault kinds land where the NVML and tool
stand-ins read them."""

import re
import sys
from pathlib import Path

import pytest

from bringup.sku import load_skus
from burnin.parsers.nccl import assess, parse_nccl_run
from lab.bmcsim.hardware import gpu_serial
from lab.fleet import Fault, NodeSpec
from lab.gpu.profile import NODE_SYSTEM_PATH, node_env, nvml_profile, tool_profile

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "lab" / "gpu" / "tools"))
import standin  # the node's tool stand-in, beside its standin_fabric

SKU = load_skus()["hgx-h100-80gb"]
VERSIONS = {"driver": "570.133.20", "cuda": "12.8", "nccl": "2.26.2-1+cuda12.8", "kernel": "6.8.0-60-generic"}


def node(*faults: dict) -> NodeSpec:
    return NodeSpec(name="p1", rack="r1", sku=SKU.sku, pool="p", bmc_address="127.10.0.1", address="127.20.0.1",
                    faults=[Fault.model_validate(f) for f in faults])


def test_nvml_serials_are_the_bmc_serials():
    n = node()
    prof = nvml_profile(n, SKU, VERSIONS)
    assert [prof[f"gpu.{i}.serial"] for i in range(8)] == [gpu_serial(n, i) for i in range(8)]


def test_missing_gpu_keeps_the_remaining_boards_serials():
    n = node({"kind": "missing_gpu", "gpu": 2})
    prof = nvml_profile(n, SKU, VERSIONS)
    assert prof["gpu_count"] == 7 and prof["gpu.2.serial"] == gpu_serial(n, 3)


def test_swapped_gpu_reports_another_serial():
    n = node({"kind": "gpu_serial_swapped", "gpu": 5})
    prof = nvml_profile(n, SKU, VERSIONS)
    assert prof["gpu.5.serial"] != gpu_serial(n, 5) and prof["gpu.5.serial"].startswith("1655")
    assert prof["gpu.4.serial"] == gpu_serial(n, 4)


def test_lifetime_ecc_fault_leaves_this_run_clean():
    prof = nvml_profile(node({"kind": "ecc_aggregate", "gpu": 1, "value": 9}), SKU, VERSIONS)
    assert prof["gpu.1.ecc.1.1"] == 9 and prof["gpu.1.ecc.1.0"] == 0


def test_gpu_burn_no_start_reaches_the_tool_profile():
    n = node({"kind": "gpuburn_no_start", "gpu": 6})
    tools = tool_profile(n, SKU, VERSIONS, nvml_profile(n, SKU, VERSIONS))
    assert tools["gpuburn_no_start"] == [6] and tools["gpuburn_faulty"] == []


# issue #26: the NCCL stand-in's two ways of not finishing, read by the agent's parser
FIX = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-tests"


def profile_of(*faults: dict) -> dict:
    n = node(*faults)
    return {**tool_profile(n, SKU, VERSIONS, nvml_profile(n, SKU, VERSIONS)), "tool_seconds": 0}


def standin_nccl(capsys, monkeypatch, *faults: dict) -> tuple[int, str]:
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE", raising=False)  # one node, not under mpirun
    rc = standin.all_reduce_perf(profile_of(*faults), ["-b", "1G", "-e", "16G", "-f", "2", "-g", "8"])
    return rc, capsys.readouterr().out


def failure_shape(line: str) -> str:
    """A failure line with its host, pid and call site taken out: the layout alone."""
    return re.sub(r"\d+", "N", line.split(":", 1)[1])


def test_nccl_dies_prints_the_recorded_failure_lines_mid_sweep_and_exits_non_zero(capsys, monkeypatch):
    rc, out = standin_nccl(capsys, monkeypatch, {"kind": "nccl_dies", "value": 2})
    parsed = parse_nccl_run(out)
    assert rc == 3 and [r["size"] for r in parsed["rows"]] == [1 << 30, 2 << 30] and not parsed["complete"]
    recorded = [ln for ln in (FIX / "issue322-rows-then-nccl-failure-multihost.txt").read_text().splitlines()
                if "failure" in ln][:2]
    mine = [ln for ln in out.splitlines() if "failure" in ln]
    assert mine[0].startswith("p1: Test NCCL failure ") and mine[1].startswith(" .. p1 pid ")
    assert [failure_shape(x) for x in mine] == [failure_shape(x) for x in recorded]
    assert [f["code"] for f in assess(parsed, {"float": 1e-5})] == ["nccl_failed"]


def test_nccl_cut_prints_rows_then_nothing_and_exits_zero(capsys, monkeypatch):
    rc, out = standin_nccl(capsys, monkeypatch, {"kind": "nccl_cut", "value": 3})
    parsed = parse_nccl_run(out)
    assert rc == 0 and len(parsed["rows"]) == 3 and parsed["failures"] == [] and not parsed["complete"]
    assert "Out of bounds" not in out and "Avg bus bandwidth" not in out
    assert [f["code"] for f in assess(parsed, {"float": 1e-5})] == ["nccl_incomplete"]


@pytest.mark.parametrize("fault", [{"kind": "nccl_dies", "value": 1}, {"kind": "nccl_cut", "value": 1}])
def test_a_healthy_profile_prints_the_whole_sweep_where_a_faulty_one_stops(capsys, monkeypatch, fault):
    rc, out = standin_nccl(capsys, monkeypatch)
    assert rc == 0 and parse_nccl_run(out)["complete"]
    _, cut = standin_nccl(capsys, monkeypatch, fault)
    assert not parse_nccl_run(cut)["complete"]


def test_under_mpirun_a_partners_fault_ends_the_run_naming_the_partner(capsys, monkeypatch):
    # rank 0 on the healthy node prints the table; the partner's rank fails at its third size
    ok, bad = profile_of(), {**profile_of({"kind": "nccl_dies", "value": 2}), "node": "p2"}
    ranks = [{"rank": i, "node": n, "pid": pid, "device": 0, "bus": "0x18", "gpu": "NVIDIA H100 80GB HBM3"}
             for i, (n, pid) in enumerate((("p1", 101), ("p2", 202)))]
    monkeypatch.setattr(standin.standin_fabric, "world",
                        lambda p: {"root": True, "ranks": ranks, "profiles": {"p1": ok, "p2": bad}})
    rc = standin.all_reduce_perf(ok, ["-b", "1G", "-e", "16G", "-f", "2", "-g", "1"])
    parsed = parse_nccl_run(capsys.readouterr().out)
    assert rc == 3 and len(parsed["rows"]) == 2
    assert parsed["failures"][0].startswith("p2: Test NCCL failure common.cu:1204")
    assert parsed["failures"][1] == ".. p2 pid 202: Test failure common.cu:915"


def test_mig_profiles_reach_the_nvml_profile_for_mig_capable_models():
    prof = nvml_profile(node(), SKU, VERSIONS)
    # NVML_GPU_INSTANCE_PROFILE_1_SLICE (0) is nvidia-smi's profile 19, seven placements
    assert (prof["mig.profile.0.id"], prof["mig.profile.0.name"], prof["mig.profile.0.starts"]) == \
        (19, "1g.10gb", "0,1,2,3,4,5,6")
    assert (prof["mig.profile.4.id"], prof["mig.profile.4.size"], prof["mig.compute.4.slices"]) == (0, 8, 7)
    h200 = load_skus()["hgx-h200-141gb"]
    assert nvml_profile(node(), h200, VERSIONS)["mig.profile.4.name"] == "7g.141gb"
    assert not [k for k in prof if k.endswith("mig_pending")]


def test_a_model_without_mig_data_gets_no_mig_keys():
    other = SKU.model_copy(update={"gpu": SKU.gpu.model_copy(update={"model": "NVIDIA L40S"})})
    assert not [k for k in nvml_profile(node(), other, VERSIONS) if k.startswith("mig.")]


def test_mig_pending_fault_marks_one_gpu_or_all():
    one = nvml_profile(node({"kind": "mig_pending", "gpu": 3}), SKU, VERSIONS)
    assert [k for k in one if k.endswith(".mig_pending")] == ["gpu.3.mig_pending"]
    every = nvml_profile(node({"kind": "mig_pending"}), SKU, VERSIONS)
    assert sorted(k for k in every if k.endswith(".mig_pending")) == [f"gpu.{i}.mig_pending" for i in range(8)]
    # a missing GPU renumbers the rest: the fault follows the physical board
    moved = nvml_profile(node({"kind": "missing_gpu", "gpu": 0}, {"kind": "mig_pending", "gpu": 3}), SKU, VERSIONS)
    assert [k for k in moved if k.endswith(".mig_pending")] == ["gpu.2.mig_pending"]


def test_a_node_session_finds_the_stand_ins_then_the_nodes_own_system_folders(monkeypatch, tmp_path):
    """Not the controller's PATH first: its python3 may be a pyenv shim (a shell script of
    some 40 processes for each tool a node runs); a node's python3 is the system's."""
    monkeypatch.setenv("PATH", "/root/.pyenv/shims:/opt/elsewhere/bin:/usr/bin")
    env = node_env(tmp_path / "root", tmp_path / "nvml")
    dirs = env["PATH"].split(":")
    assert dirs[0] == str(tmp_path / "root" / "usr/local/bin") == env["PATH_PREFIX"]
    assert dirs[1:7] == NODE_SYSTEM_PATH.split(":") == ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
                                                         "/sbin", "/bin"]
    assert dirs[7:] == ["/root/.pyenv/shims", "/opt/elsewhere/bin", "/usr/bin"]   # a fallback only
