"""End to end: the real agent, in a subprocess, against the lab's NVML stand-in (loaded by
the real pynvml) and tool stand-ins, one node per fault class, judged by bringup.acceptance.judge with
the GPU serials the lab's BMC simulator reports (as discovery records them in NetBox)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bringup.acceptance.judge import Verdict, judge
from bringup.acceptance.plan import make_plan, manifest_versions
from bringup.acceptance.result import BurnInResult, parse_result
from bringup.acceptance.thresholds import SkuThresholds, thresholds_for
from bringup.sku import load_skus
from bringup.yamlio import load_file
from lab.bmcsim.hardware import gpu_serial, present_gpus
from lab.fleet import Fault, NodeSpec
from lab.gpu import write_node_profile

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
# host checks (stress-ng, fio) run once in the healthy test; the fault runs skip them to stay fast
FAST_SKIP = ("cpu_mem", "disk")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    skus = load_skus()
    versions = manifest_versions(load_file(REPO / "images" / "ubuntu-2404-cuda128.yaml").data)
    return {"skus": skus, "versions": versions, "root": tmp_path_factory.mktemp("burnin-e2e"), "n": 0}


def make_node(world: dict[str, Any], faults: list[dict[str, Any]], sku: str = "hgx-h100-80gb") -> NodeSpec:
    world["n"] += 1
    n = world["n"]
    return NodeSpec(name=f"e2e-n{n:02d}", rack="r09", sku=sku, pool="train", bmc_address=f"127.10.9.{n}",
                    address=f"127.20.9.{n}", faults=[Fault.model_validate(f) for f in faults])


def bmc_serials(world: dict[str, Any], node: NodeSpec) -> list[str]:
    """What discovery records in NetBox: the BMC simulator's serials of the GPUs present."""
    return [gpu_serial(node, i) for i in present_gpus(node, world["skus"][node.sku])]


def prepare(world: dict[str, Any], node: NodeSpec, fast: bool = True, tool_timeout: float | None = None,
            ) -> tuple[dict[str, Any], SkuThresholds, Path, dict[str, str]]:
    spec = world["skus"][node.sku]
    dest = world["root"] / node.name
    env = write_node_profile(node, spec, world["versions"], dest, nvml_build_dir=world["root"] / "nvml")
    th = thresholds_for(spec)
    checks = [c for c in th.required_checks if not (fast and c in FAST_SKIP)]
    if fast:
        th = SkuThresholds(sku=th.sku, values=th.values, rules=th.rules, required_checks=checks)
    plan = make_plan(spec, th, world["versions"], "quick", node=node.name, checks=checks)
    if tool_timeout is not None:
        for spec_ in plan["tools"].values():
            spec_["timeout_s"] = tool_timeout
    (dest / "plan.json").write_text(json.dumps(plan))
    full_env = dict(os.environ)
    full_env.update(env)
    full_env["PYTHONPATH"] = str(REPO)
    return plan, th, dest, full_env


def run_node(world: dict[str, Any], faults: list[dict[str, Any]], sku: str = "hgx-h100-80gb",
             fast: bool = True, tool_timeout: float | None = None,
             dpkg_status: str | None = None) -> tuple[BurnInResult, Verdict, int]:
    node = make_node(world, faults, sku)
    _plan, th, dest, full_env = prepare(world, node, fast, tool_timeout)
    plan_path = dest / "plan.json"
    if dpkg_status is not None:
        # as lab.nodes does: the node's root with a dpkg database, named by BRINGUP_SYSROOT
        (dest / "var/lib/dpkg").mkdir(parents=True, exist_ok=True)
        (dest / "var/lib/dpkg/status").write_text(dpkg_status)
        full_env["BRINGUP_SYSROOT"] = str(dest)
    proc = subprocess.run([sys.executable, "-m", "burnin", "run", "--plan", str(plan_path),
                           "--out", str(dest / "result.json")], env=full_env, capture_output=True, text=True,
                          timeout=60, cwd=str(dest), check=False)
    assert proc.stdout.strip(), proc.stderr
    result = parse_result(proc.stdout)
    assert json.loads((dest / "result.json").read_text()) == json.loads(proc.stdout)
    return result, judge(result, th, bmc_serials=bmc_serials(world, node)), proc.returncode


def test_healthy_node_passes_with_every_check(world):
    result, verdict, rc = run_node(world, [], sku="hgx-h200-141gb", fast=False)
    assert verdict.status == "pass", verdict.text()
    assert rc == 0
    assert {c.name for c in result.checks} == set(thresholds_for(world["skus"]["hgx-h200-141gb"]).required_checks)
    inv = result.check("inventory")
    assert inv.metrics["gpu_count"] == 8 and inv.data["gpus"][0]["name"] == "NVIDIA H200"
    assert inv.data["gpus"][0]["uuid"].startswith("GPU-") and inv.data["gpus"][0]["pci_bus_id"]
    assert result.metric("nccl", "busbw_largest_gbps") > 431
    assert result.metric("cpu_mem", "stressors_failed") == 0
    assert result.metric("disk", "write_mib_s") > 0
    assert result.check("versions").data["installed"]["driver"] == world["versions"]["driver"]
    assert result.metric("clocks", "samples") > 0
    # PCIe judged from samples under load only; the final idle sample is not counted
    pcie = result.check("pcie")
    assert pcie.status == "pass" and all(g["samples_under_load"] > 0 for g in pcie.data["gpus"])
    assert result.metric("gpu_burn", "gpus_no_work") == 0 and result.metric("gpu_burn", "gflops_min") > 0
    # the verdict above was given the BMC's serials: NVML's are the same boards
    assert len(result.serials()) == 8 and all(result.serials()) and verdict.notes == []


FAULTS = [
    # (id, faults, expected reason code, text the reason must contain)
    ("missing_gpu", [{"kind": "missing_gpu", "gpu": 5}], "gpu_count_mismatch", "expected 8 GPUs"),
    ("ecc_off", [{"kind": "ecc_off", "gpu": 2}], "ecc_disabled", "GPU 2"),
    ("ecc_pending", [{"kind": "ecc_pending", "gpu": 1}], "ecc_pending", "reset GPU 1"),
    ("ecc_uncorrectable", [{"kind": "ecc_uncorrectable", "gpu": 6, "value": 3}], "ecc_uncorrectable", "RMA GPU 6"),
    ("row_remap_pending", [{"kind": "row_remap_pending", "gpu": 3}], "row_remap_pending", "reset GPU 3"),
    ("row_remap_failure", [{"kind": "row_remap_failure", "gpu": 4}], "row_remap_failure", "RMA GPU 4"),
    ("pcie_downtrained", [{"kind": "pcie_downtrained", "gpu": 7, "value": 8}], "pcie_downtrained", "x8"),
    ("nvlink_down", [{"kind": "nvlink_down", "gpu": 0, "link": 11}], "nvlink_down", "NVLink 11"),
    ("nvlink_errors", [{"kind": "nvlink_errors", "gpu": 5, "link": 2, "value": 250}], "nvlink_errors", "NVLink 2"),
    ("xid_79", [{"kind": "xid", "gpu": 2, "value": 79}], "xid_fatal", "XID 79"),
    ("xid_48", [{"kind": "xid", "gpu": 6, "value": 48}], "xid_fatal", "XID 48"),
    ("thermal_slowdown", [{"kind": "thermal_slowdown", "gpu": 3}], "thermal_slowdown", "cooling of GPU 3"),
    ("power_brake", [{"kind": "power_brake", "gpu": 1}], "power_brake", "PSU"),
    ("low_busbw", [{"kind": "low_busbw", "value": 310.0}], "busbw_low", "below 460"),
    ("nccl_wrong", [{"kind": "nccl_wrong", "value": 5}], "nccl_wrong", "5 wrong values"),
    # all_reduce_perf dies after two rows with "Test NCCL failure" and exit 3; or its output
    # stops after three rows with no summary and exit 0: never a pass (issue #26)
    ("nccl_dies", [{"kind": "nccl_dies", "value": 2}], "nccl_failed", "Test NCCL failure common.cu:1204"),
    ("nccl_cut", [{"kind": "nccl_cut", "value": 3}], "nccl_incomplete", "cut before its summary"),
    ("dcgm_fail", [{"kind": "dcgm_fail", "test": "memory", "gpu": 2}], "dcgm_failed", "memory"),
    ("dcgm_skip", [{"kind": "dcgm_skip"}], "dcgm_not_run", "skip"),
    ("gpuburn_faulty", [{"kind": "gpuburn_faulty", "gpu": 4}], "gpuburn_faulty", "RMA GPU 4"),
    ("gpuburn_no_start", [{"kind": "gpuburn_no_start", "gpu": 3}], "gpuburn_no_work", "GPU 3: gpu-burn did no work"),
    ("ib_port_down", [{"kind": "ib_port_down", "iface": "cx3"}], "ib_port_down", "mlx5_5"),
    ("ib_wrong_speed", [{"kind": "ib_wrong_speed", "iface": "cx1", "value": 200}], "ib_rate_low", "mlx5_3"),
    ("driver_drift", [{"kind": "driver_drift", "value": "570.86.15"}], "driver_mismatch", "570.86.15"),
    ("nccl_drift", [{"kind": "nccl_drift", "value": "2.21.5-1+cuda12.4"}], "nccl_mismatch", "2.21.5"),
    ("missing_tool", [{"kind": "missing_tool", "value": "dcgmi"}], "tool_missing", "install dcgmi"),
    ("garbage_output", [{"kind": "garbage_output", "value": "gpu_burn"}], "unparseable_output", "gpu_burn"),
]


@pytest.mark.parametrize("faults,code,text", [pytest.param(f, c, t, id=i) for i, f, c, t in FAULTS])
def test_fault_fails_with_the_right_reason(world, faults, code, text):
    _, verdict, rc = run_node(world, faults)
    assert verdict.status == "fail", verdict.text()
    assert rc == 1
    hits = [r for r in verdict.reasons if r.code == code]
    assert hits, f"no {code} reason in: {verdict.text()}"
    assert any(text in f"{r.message} {r.remediation}" for r in hits), verdict.text()


def test_tool_that_hangs_is_killed_and_fails(world):
    result, verdict, _ = run_node(world, [{"kind": "tool_hangs", "value": "all_reduce_perf"}], tool_timeout=1.5)
    assert verdict.status == "fail"
    nccl = result.check("nccl")
    assert nccl.status == "fail" and nccl.evidence[0]["timed_out"] is True
    assert nccl.evidence[0]["stdout_tail"].startswith("starting")
    assert any(r.code == "tool_timeout" and "all_reduce_perf" in r.remediation for r in verdict.reasons)
    # the rest of the run still happened
    assert result.check("xid").status == "pass"


def test_node_dpkg_database_is_read_by_the_real_dpkg_query(world):
    stanza = ("Package: libnccl2\nStatus: hold ok installed\nPriority: optional\nSection: libs\n"
              "Architecture: amd64\nVersion: {v}\nDescription: NCCL (simulated)\n")
    pinned = world["versions"]["nccl"]
    _, ok, _ = run_node(world, [], dpkg_status=stanza.format(v=pinned))
    assert ok.status == "pass", ok.text()
    result, bad, _ = run_node(world, [], dpkg_status=stanza.format(v="2.19.3-1+cuda12.3"))
    assert result.check("versions").data["installed"]["nccl"] == "2.19.3-1+cuda12.3"
    assert [r.code for r in bad.reasons] == ["nccl_mismatch"]


def test_gpu_swapped_since_discovery_fails_in_the_judge(world):
    # the agent cannot know (rc 0); the judge compares NVML's serials with the BMC's
    _result, verdict, rc = run_node(world, [{"kind": "gpu_serial_swapped", "gpu": 5}])
    assert rc == 0 and verdict.status == "fail", verdict.text()
    (r,) = verdict.reasons
    assert r.code == "gpu_serial_mismatch" and "1655" in r.message and "rerun discovery" in r.remediation


def test_lifetime_ecc_counts_are_reported_not_failed(world):
    result, verdict, _ = run_node(world, [{"kind": "ecc_aggregate", "gpu": 2, "value": 4}])
    assert verdict.status == "pass", verdict.text()
    ecc = result.check("ecc")
    assert ecc.metrics["uncorrected_aggregate"] == 4 and ecc.metrics["uncorrected_volatile"] == 0
    assert [(f.code, f.severity, f.gpu) for f in ecc.findings] == [("ecc_aggregate", "info", 2)]


def test_agent_stopped_mid_run_leaves_a_partial_document_naming_the_step(world):
    """The agent rewrites its document as it goes: SIGTERM (what `timeout` sends when the
    budget is spent) during a hung nccl check leaves the finished checks and names nccl."""
    node = make_node(world, [{"kind": "tool_hangs", "value": "all_reduce_perf"}])
    _plan, th, dest, env = prepare(world, node, tool_timeout=120)
    out = dest / "result.json"
    proc = subprocess.Popen([sys.executable, "-m", "burnin", "run", "--plan", str(dest / "plan.json"),
                             "--out", str(out)], env=env, cwd=str(dest), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            doc = json.loads(out.read_text()) if out.exists() else {}
            if doc.get("running") == "nccl":
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"the agent never reported nccl as running: {doc.get('running')!r}")
        assert doc["partial"] and "gpu_burn" in [c["name"] for c in doc["checks"]]
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 124, proc.stderr.read() if proc.stderr else ""
    result = parse_result(out.read_text())
    assert result.partial and result.running == "nccl" and "SIGTERM during nccl" in (result.stopped or "")
    verdict = judge(result, th, bmc_serials=bmc_serials(world, node))
    assert verdict.status == "incomplete", verdict.text()
    assert verdict.reasons[0].code == "unfinished" and verdict.reasons[0].check == "nccl"
    assert {r.check for r in verdict.reasons if r.code == "not_reached"} == {"pcie", "clocks", "xid"}
    # the hung all_reduce_perf stand-in went with the agent, not left behind on the node
    time.sleep(0.5)
    assert not [pid for pid in _pids_running(str(dest / "usr/local/bin/all_reduce_perf"))]


def _pids_running(needle: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(entry.name))
            except OSError:
                continue
    return out
