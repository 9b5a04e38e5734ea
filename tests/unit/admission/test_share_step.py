"""The share step's pure parts and the gate's use of the sharing mode: the device
plugin's config per mode, what an agent document says did not take, the gate's checks
for a shared pool (exact resources and labels instead of the whole-GPU ones) and its
smoke pod asking for one share."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bringup.admission import readiness as rd
from bringup.admission import smoke
from bringup.admission.gate_step import sharing_checks
from bringup.admission.pool import Pool
from bringup.admission.share_step import applied_problems, device_plugin_config, pool_mode
from bringup.admission.sharing import expected, judge_sharing, sharing_mode
from bringup.errors import ParseError
from bringup.netbox.adapter import NodeRecord
from bringup.sku import load_skus

FIX = Path(__file__).resolve().parents[2] / "fixtures"
SKUS = load_skus()
H100, H200 = SKUS["hgx-h100-80gb"], SKUS["hgx-h200-141gb"]
POLICY = rd.load_policy()
BALANCED = {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}


def record(sku, pool: dict) -> NodeRecord:
    return NodeRecord(id=1, name="n1", site="t", rack="r1", status="planned", stage="validating", sku=sku,
                      pool=pool, macs={}, bmc_address="", address="", serial="", custom_fields={}, url="", tags=[])


def mode(sku, **pool):
    return sharing_mode(Pool(**pool), sku)


MIG = {"sharing": "mig", "mig": {"geometry": "all-balanced", "strategy": "mixed"}}
TS = {"sharing": "time-slicing", "time_slicing": {"replicas": 10}}


def test_device_plugin_config_per_mode_is_the_plugin_s_own_format():
    assert device_plugin_config(mode(H100)) == {"version": "v1", "flags": {"migStrategy": "none"}}
    assert device_plugin_config(mode(H200, **MIG))["flags"] == {"migStrategy": "mixed"}
    # the README's time-slicing example (tests/fixtures/sharing), with the flag beside it
    readme = yaml.safe_load((FIX / "sharing" / "device-plugin-time-slicing.yaml").read_text())[0]["config"]
    got = device_plugin_config(mode(H100, **TS))
    assert got["sharing"]["timeSlicing"]["resources"] == readme["sharing"]["timeSlicing"]["resources"]
    assert got["flags"] == {"migStrategy": "none"} and got["version"] == "v1"


def gpu(i, current=1, instances=None, **kw):
    return {"index": i, "current": current, "pending": current, "instances": BALANCED if instances is None
            else instances, **kw}


def test_a_document_is_good_only_when_every_gpu_reads_back_the_geometry():
    mig = mode(H200, **MIG)
    assert applied_problems(mig, {"gpus": [gpu(i) for i in range(8)]}) == []
    pending = gpu(3, current=0, instances={}, error="MIG mode is pending enable (NVML: GPU requires restart)")
    got = applied_problems(mig, {"gpus": [gpu(0), pending]})
    assert got == ["GPU 3: MIG mode is pending enable (NVML: GPU requires restart)"]
    assert applied_problems(mig, {"gpus": [gpu(0, instances={"1g.18gb": 7})]}) == [
        "GPU 0: MIG instances read back {'1g.18gb': 7}, wanted {'1g.18gb': 2, '2g.35gb': 1, '3g.71gb': 1}"]
    assert applied_problems(mig, {"gpus": [gpu(0, current=0, instances={})]})[0].startswith("GPU 0: MIG mode reads 0")


def test_mig_off_and_documents_the_step_cannot_read():
    off = mode(H100, **TS)
    assert applied_problems(off, {"gpus": [gpu(0, current=0, instances={})]}) == []
    assert "wanted disabled" in applied_problems(off, {"gpus": [gpu(0, current=1, instances={})]})[0]
    assert applied_problems(off, {"gpus": []}) == ["the sharing document lists no GPUs"]
    assert applied_problems(off, {}) == ["the sharing document lists no GPUs"]
    assert applied_problems(off, {"error": "nvmlInit failed: Driver Not Loaded"}) == [
        "setting GPU sharing failed: nvmlInit failed: Driver Not Loaded"]
    assert "not an object" in applied_problems(off, {"gpus": ["GPU 0"]})[0]


def test_a_pool_netbox_holds_wrong_names_the_field():
    assert pool_mode(record(H200, {"name": "inf", **MIG}))[0] == "inf"
    with pytest.raises(ParseError, match="time_slicing"):
        pool_mode(record(H100, {"name": "inf", "sharing": "time-slicing"}))


def facts(allocatable, labels) -> rd.NodeFacts:
    return rd.NodeFacts(registered=True, ready=True, allocatable=allocatable, labels=labels)


def advertised(sku, **pool):
    want = expected(mode(sku, **pool), sku)
    return {k: str(v) for k, v in want.resources.items()}, dict(want.labels)


def test_a_shared_pool_is_judged_on_its_own_resources_not_on_whole_gpus():
    exp = rd.Expected(gpu_count=8, gpu_model=H200.gpu.model, gpu_memory_mib=H200.gpu.memory_mib, driver="570.133.20")
    alloc, labels = advertised(H200, **MIG)
    shared, extra, resource = sharing_checks(record(H200, {"name": "p", **MIG}), facts(alloc, labels))
    assert extra == [] and resource == "nvidia.com/mig-1g.18gb"
    checks = rd.node_checks(POLICY, facts(alloc, labels), exp, shared)
    assert not rd.failures(checks), rd.failures(checks)
    # no whole-GPU check: a MIG node has no nvidia.com/gpu to count
    assert "allocatable" not in {c.name for c in checks}
    # the geometry did not take: the plugin advertises whole GPUs
    shared, _, _ = sharing_checks(record(H200, {"name": "p", **MIG}), facts({"nvidia.com/gpu": "8"}, labels))
    reasons = rd.failures(rd.node_checks(POLICY, facts({"nvidia.com/gpu": "8"}, labels), exp, shared))
    assert any("advertises no nvidia.com/mig-1g.18gb" in r for r in reasons), reasons
    assert any("nvidia.com/gpu: 8 is not part of mig" in r for r in reasons), reasons


def test_an_exclusive_node_keeps_the_whole_gpu_checks_and_must_have_no_share_left():
    rec = record(H100, {"name": "train"})
    shared, extra, resource = sharing_checks(rec, facts({"nvidia.com/gpu": "8"}, {}))
    assert shared is None and extra == [] and resource is None
    _, extra, _ = sharing_checks(rec, facts({"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "7"}, {}))
    assert [c.outcome for c in extra] == ["fail"] and "mig-1g.10gb" in extra[0].name
    # a pool NetBox holds wrong is a failing check, never a pass
    _, extra, _ = sharing_checks(record(H100, {"name": "p", "sharing": "mig"}), facts({}, {}))
    assert extra[0].outcome == "fail" and "mig" in extra[0].detail


def test_judge_sharing_is_what_the_gate_uses_for_time_slicing():
    alloc, labels = advertised(H100, **TS)
    assert alloc == {"nvidia.com/gpu": "80"}
    checks = judge_sharing(expected(mode(H100, **TS), H100), {"nvidia.com/gpu": "70"}, labels)
    assert [c.detail for c in checks if not c.ok] == ["allocatable nvidia.com/gpu: 70, time-slicing x10 needs 80"]


def test_the_smoke_pod_of_a_shared_pool_asks_for_one_share_and_sees_the_model():
    pod = smoke.pod_manifest(POLICY, "n1", 1, "nvidia.com/mig-1g.18gb")
    c = pod["spec"]["containers"][0]
    assert c["resources"]["limits"] == {"nvidia.com/mig-1g.18gb": "1"} == c["resources"]["requests"]
    assert c["command"][-1].endswith("-g 1")
    exp = rd.Expected(gpu_count=8, gpu_model="NVIDIA H100 80GB HBM3", gpu_memory_mib=81559, driver="550.54.15")
    text = ((FIX / "nvidia-smi" / "query-h100x4-driver-noheader.csv").read_text()
            + (FIX / "nccl-tests" / "issue319-8g-row.txt").read_text())
    out = smoke.PodOutcome(name="bringup-smoke-n1", phase="Succeeded", exit_code=0, log=text)
    # four parent GPUs seen for one share: the model is what counts, not the node's count
    assert [c.outcome for c in smoke.assess(out, exp, share=True)] == ["pass", "pass", "pass"]
    assert smoke.assess(out, exp)[1].outcome == "fail"
