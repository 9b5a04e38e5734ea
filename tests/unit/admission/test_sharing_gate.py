"""What a node of a sharing pool must advertise (bringup.admission.sharing.expected) and the
gate's judgment of it (judge_sharing), on GFD's and the device plugin's recorded outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bringup.admission import sharing as sh
from bringup.admission.pool import Pool
from bringup.sku import load_skus

FIX = Path(__file__).resolve().parents[2] / "fixtures"
SKUS = load_skus()
H100, H200 = SKUS["hgx-h100-80gb"], SKUS["hgx-h200-141gb"]


def mock_sku(count: int):
    """The SKU shape of GFD's own unit tests: ``count`` GPUs named MOCKMODEL."""
    return H100.model_copy(update={"gpu": H100.gpu.model_copy(update={"model": "MOCKMODEL", "count": count})})


def gfd(case: str) -> dict[str, str]:
    return yaml.safe_load((FIX / "sharing" / "gfd-sharing-labels.yaml").read_text())[case]


def p5_node() -> dict:
    return yaml.safe_load((FIX / "gfd" / "p5-h100-node-labels.yaml").read_text())


def outcomes(checks) -> dict[str, str]:
    return {c.name: c.outcome for c in checks}


def mode(sku, **pool):
    return sh.sharing_mode(Pool(**pool), sku)


# --- expected against GFD's own expectations -------------------------------------------------
def test_time_slicing_labels_are_gfds():
    sku = mock_sku(2)
    want = sh.expected(sh.TimeSlicing(replicas=2), sku)
    labels = gfd("time-slicing-2-devices")
    assert {k: labels[k] for k in want.labels} == dict(want.labels)
    assert all(c.ok for c in sh.judge_sharing(want, {"nvidia.com/gpu": "4"}, labels))


def test_exclusive_labels_are_gfds():
    want = sh.expected(sh.Exclusive(), mock_sku(1))
    labels = gfd("none-1-device")
    assert {k: labels[k] for k in want.labels} == dict(want.labels)


def test_mig_single_labels_are_gfds():
    want = sh.expected(sh.Mig(geometry="custom", profiles=(("1g.100gb", 1),), strategy="single"), mock_sku(2))
    labels = gfd("mig-single-2-devices")
    assert {k: labels[k] for k in want.labels} == dict(want.labels)
    assert want.resources == {"nvidia.com/gpu": 2}


def test_an_invalid_mig_single_node_fails():
    want = sh.expected(sh.Mig(geometry="custom", profiles=(("1g.100gb", 1),), strategy="single"), mock_sku(2))
    checks = outcomes(sh.judge_sharing(want, {"nvidia.com/gpu": "0"}, gfd("mig-single-invalid")))
    assert checks["sharing resource nvidia.com/gpu"] == "fail"
    assert checks["sharing label nvidia.com/gpu.product"] == "fail"
    assert checks["sharing label nvidia.com/mig.strategy"] == "pass"


def test_time_slicing_resources_are_the_readmes():
    for case in yaml.safe_load((FIX / "sharing" / "device-plugin-time-slicing.yaml").read_text()):
        ts = case["config"]["sharing"]["timeSlicing"]
        sku = H100.model_copy(update={"gpu": H100.gpu.model_copy(update={"count": case["gpus"]})})
        want = sh.expected(sh.TimeSlicing(replicas=ts["resources"][0]["replicas"],
                                          rename_by_default=ts.get("renameByDefault", False)), sku)
        assert dict(want.resources) == case["capacity"]
        capacity = {k: str(v) for k, v in case["capacity"].items()}
        assert outcomes(sh.judge_sharing(want, capacity, {}))[f"sharing resource {next(iter(capacity))}"] == "pass"


def test_renamed_time_slicing_keeps_the_product_unshared():
    want = sh.expected(sh.TimeSlicing(replicas=4, rename_by_default=True), H100)
    assert want.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert want.resources == {"nvidia.com/gpu.shared": 32}


# --- MIG mixed on the SKUs ---------------------------------------------------------------------
def test_mig_mixed_balanced_h200():
    want = sh.expected(mode(H200, sharing="mig", mig={"geometry": "all-balanced", "strategy": "mixed"}), H200)
    assert want.resources == {"nvidia.com/mig-1g.18gb": 16, "nvidia.com/mig-2g.35gb": 8, "nvidia.com/mig-3g.71gb": 8}
    assert want.labels["nvidia.com/mig-3g.71gb.product"] == "NVIDIA-H200-MIG-3g.71gb"
    assert want.labels["nvidia.com/mig-1g.18gb.count"] == "16"
    assert want.labels["nvidia.com/mig.strategy"] == "mixed"


def node_for(want: sh.ExpectedSharing) -> tuple[dict, dict]:
    return {k: str(v) for k, v in want.resources.items()}, dict(want.labels)


def test_a_node_that_shows_exactly_the_mode_passes():
    want = sh.expected(mode(H100, sharing="mig", mig={"geometry": "all-1g.10gb", "strategy": "mixed"}), H100)
    alloc, labels = node_for(want)
    alloc.update({"cpu": "192", "memory": "2Ti"})   # other resources are not the gate's business here
    checks = sh.judge_sharing(want, alloc, labels)
    assert checks and all(c.ok for c in checks)


def test_a_stale_zero_gpu_resource_on_a_mixed_node_is_ignored():
    want = sh.expected(mode(H100, sharing="mig", mig={"geometry": "all-1g.10gb", "strategy": "mixed"}), H100)
    alloc, labels = node_for(want)
    checks = sh.judge_sharing(want, {**alloc, "nvidia.com/gpu": "0"}, labels)
    assert all(c.ok for c in checks)


def test_a_node_whose_mig_geometry_did_not_take():
    """A plain 8-GPU H100 node (nvidia.com/gpu: 8, no MIG labels) in a MIG-mixed pool."""
    want = sh.expected(mode(H100, sharing="mig", mig={"geometry": "all-balanced", "strategy": "mixed"}), H100)
    node = p5_node()
    checks = sh.judge_sharing(want, node["allocatable"], node["labels"])
    got = outcomes(checks)
    assert not any(c.ok for c in checks)
    assert got["sharing resource nvidia.com/mig-1g.10gb"] == "fail"
    assert got["sharing resource nvidia.com/gpu"] == "fail"
    assert got["sharing label nvidia.com/mig.strategy"] == "unknown"
    extra = next(c for c in checks if c.name == "sharing resource nvidia.com/gpu")
    assert "did not take" in extra.detail


def test_a_time_sliced_pool_on_a_node_that_was_not_sliced():
    want = sh.expected(mode(H100, sharing="time-slicing", time_slicing={"replicas": 4}), H100)
    node = p5_node()
    got = outcomes(sh.judge_sharing(want, node["allocatable"], node["labels"]))
    assert got["sharing resource nvidia.com/gpu"] == "fail"          # 8, not 32
    assert got["sharing label nvidia.com/gpu.product"] == "fail"     # not -SHARED
    assert got["sharing label nvidia.com/gpu.replicas"] == "unknown"  # GFD of the KWOK profile writes none


def test_exclusive_node_with_mig_devices_left_fails():
    want = sh.expected(sh.Exclusive(), H100)
    node = p5_node()
    alloc = {**node["allocatable"], "nvidia.com/mig-1g.10gb": "7"}
    got = outcomes(sh.judge_sharing(want, alloc, node["labels"]))
    assert got["sharing resource nvidia.com/gpu"] == "pass"
    assert got["sharing resource nvidia.com/mig-1g.10gb"] == "fail"


@pytest.mark.parametrize("raw", ["8Gi", "", "eight"])
def test_an_unreadable_quantity_is_unknown_never_pass(raw):
    want = sh.expected(sh.Exclusive(), H100)
    assert outcomes(sh.judge_sharing(want, {"nvidia.com/gpu": raw}, {}))["sharing resource nvidia.com/gpu"] == "unknown"


def test_nothing_advertised_passes_nothing():
    want = sh.expected(mode(H100, sharing="mig", mig={"geometry": "all-3g.40gb", "strategy": "single"}), H100)
    checks = sh.judge_sharing(want, {}, {})
    assert checks and not any(c.ok for c in checks)
    assert outcomes(checks)["sharing resource nvidia.com/gpu"] == "fail"
