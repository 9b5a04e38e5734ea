"""The readiness gate's node checks (bringup.admission.readiness) on real label layouts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from bringup.admission import readiness as rd
from bringup.errors import ConfigError
from bringup.resources import data_file

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "gfd"
POLICY = rd.load_policy()
H100 = rd.Expected(gpu_count=8, gpu_model="NVIDIA H100 80GB HBM3", gpu_memory_mib=81559, driver="570.133.20")


def p5_node() -> dict:
    return yaml.safe_load((FIX / "p5-h100-node-labels.yaml").read_text())


def facts(**kw) -> rd.NodeFacts:
    doc = p5_node()
    base = {"registered": True, "ready": True, "allocatable": doc["allocatable"], "labels": doc["labels"]}
    base.update(kw)
    return rd.NodeFacts(**base)


def by_name(checks):
    return {c.name: c for c in checks}


def test_policy_loads_with_the_validation_pending_taint():
    assert str(POLICY.taint) == "bringup.io/validation-pending=true:NoSchedule"
    assert POLICY.gpu_resource == "nvidia.com/gpu"


def test_real_gfd_labels_of_an_h100_node_agree_except_the_driver_they_were_taken_with():
    # the recorded node runs driver 570.86.x; our image pins 570.133.20: a drifted driver
    checks = by_name(rd.node_checks(POLICY, facts(), H100))
    assert checks["allocatable"].ok
    assert checks["label nvidia.com/gpu.product"].ok
    assert checks["label nvidia.com/gpu.count"].ok
    # 81920 (profile rounding) against NVML's 81559: 0.44 %, inside the 1 % allowed
    assert checks["label nvidia.com/gpu.memory"].ok
    drv = checks["label nvidia.com/cuda.driver.major+nvidia.com/cuda.driver.minor+nvidia.com/cuda.driver.rev"]
    assert drv.outcome == "fail" and "570.86" in drv.detail
    same = rd.Expected(8, "NVIDIA H100 80GB HBM3", 81559, "570.86.16")
    assert not rd.failures(rd.node_checks(POLICY, facts(), same))


def test_seven_of_eight_gpus_allocatable_is_refused():
    checks = rd.node_checks(POLICY, facts(allocatable={"nvidia.com/gpu": "7"}), H100)
    assert any("allocatable" in f and "7" in f and "NetBox expects 8" in f for f in rd.failures(checks))


def test_a_gpu_out_of_service_is_not_expected_and_the_labels_still_count_it():
    """Issue #27 item 3: GPU 5 quarantined in NetBox: 7 allocatable is what the node should
    hand out; 8 is the quarantined GPU handed out again; GFD's count label stays 8."""
    one_out = dataclasses.replace(H100, gpus_out=(5,))
    checks = by_name(rd.node_checks(POLICY, facts(allocatable={"nvidia.com/gpu": "7"}), one_out))
    assert checks["allocatable"].ok and "8 less GPU 5 out of service" in checks["allocatable"].detail
    assert checks["label nvidia.com/gpu.count"].ok
    again = by_name(rd.node_checks(POLICY, facts(allocatable={"nvidia.com/gpu": "8"}), one_out))
    assert not again["allocatable"].ok and "NetBox expects 7 (8 less GPU 5" in again["allocatable"].detail


@pytest.mark.parametrize("alloc, outcome", [({}, "fail"), ({"nvidia.com/gpu": "8k"}, "unknown"),
                                            ({"nvidia.com/gpu": ""}, "unknown")])
def test_missing_or_unreadable_allocatable_never_passes(alloc, outcome):
    c = by_name(rd.node_checks(POLICY, facts(allocatable=alloc), H100))["allocatable"]
    assert c.outcome == outcome and not c.ok


def test_not_ready_unregistered_and_no_condition():
    assert rd.failures(rd.node_checks(POLICY, rd.NodeFacts(registered=False), H100)) == [
        "registered: the node never registered with the cluster"]
    c = by_name(rd.node_checks(POLICY, facts(ready=False, ready_reason="KubeletNotReady"), H100))["ready"]
    assert c.outcome == "fail" and "KubeletNotReady" in c.detail
    assert by_name(rd.node_checks(POLICY, facts(ready=None), H100))["ready"].outcome == "unknown"


def test_wrong_product_and_unreadable_memory():
    labels = {**p5_node()["labels"], "nvidia.com/gpu.product": "NVIDIA-H100-PCIe", "nvidia.com/gpu.memory": "80GB"}
    checks = by_name(rd.node_checks(POLICY, facts(labels=labels), H100))
    assert checks["label nvidia.com/gpu.product"].outcome == "fail"
    assert checks["label nvidia.com/gpu.memory"].outcome == "unknown"


def test_version_prefix_compares_components_not_characters():
    rule = rd.LabelRule(key="a+b+c", expect="driver", op="version_prefix")
    assert rd.compare(rule, "570.133", "570.133.20").ok
    assert not rd.compare(rule, "570.13", "570.133.20").ok
    assert rd.compare(rule, "570.x", "570.133.20").outcome == "unknown"


def test_absent_labels_are_compared_only_when_required():
    required = rd.LabelRule(key="nvidia.com/gpu.count", expect="gpu_count", op="equals", required=True)
    policy = POLICY.model_copy(update={"labels": [required]})
    assert rd.label_checks(policy, {}, H100)[0].outcome == "fail"
    assert rd.label_checks(POLICY, {}, H100)[0].ok


def test_a_bad_policy_names_the_line(tmp_path):
    text = data_file("readiness.yaml").read_text().replace("    op: equals", "    op: eval", 1)
    (tmp_path / "r.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"r.yaml:\d+ labels\[0\]\.op"):
        rd.load_policy(tmp_path / "r.yaml")
