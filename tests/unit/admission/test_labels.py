"""Label and taint policy (bringup.admission.labels)."""

from __future__ import annotations

import datetime as dt

import pytest

from bringup.admission.labels import (
    QUARANTINE_KEY,
    gpu_product_label,
    label_value_problem,
    node_labels,
    quarantine_taint,
    reason_code,
    validate_labels,
)
from bringup.admission.pool import Pool
from bringup.errors import ConfigError
from bringup.sku import load_skus

SKUS = load_skus()
BURNIN = {"status": "passed", "date": dt.datetime(2026, 11, 30, 23, 59, tzinfo=dt.UTC)}


def test_all_expected_labels_from_sku_and_pool():
    sku = SKUS["hgx-h100-80gb"]
    pool = Pool(workload="inference", sharing="mig", fabric="roce-400g")
    labels = node_labels(sku, pool, {}, BURNIN, pool_name="infer-h100")
    assert labels == {
        "bringup.io/accelerator": sku.accelerator,
        "bringup.io/topology": sku.topology,
        "bringup.io/fabric": "roce-400g",
        "bringup.io/workload": "inference",
        "bringup.io/sharing": "mig",
        "bringup.io/pool": "infer-h100",
        "bringup.io/burnin-status": "passed",
        "bringup.io/burnin-date": "2026-11-30",
    }
    assert labels["bringup.io/accelerator"] == "h100-80gb"
    # a MIG pool's GPU count, product and memory are GFD's (the MIG devices'); an
    # exclusive pool's are set up front so workloads can select before GFD runs
    whole = node_labels(sku, Pool(sharing="exclusive"), {}, BURNIN, pool_name="train")
    assert whole["nvidia.com/gpu.count"] == str(sku.gpu.count)
    assert whole["nvidia.com/gpu.product"] == sku.gpu.model.replace(" ", "-")
    assert whole["nvidia.com/gpu.memory"] == str(sku.gpu.memory_mib)
    # the Kueue topology's levels: rack always, block where NetBox gives the rack a location
    placed = node_labels(sku, pool, {}, BURNIN, pool_name="infer-h100", rack="r01", block="su1")
    assert {k: v for k, v in placed.items() if k not in labels} == {"bringup.io/rack": "r01",
                                                                    "bringup.io/block": "su1"}
    assert "bringup.io/block" not in node_labels(sku, pool, {}, BURNIN, pool_name="p", rack="r01")
    with pytest.raises(ConfigError, match="bringup.io/rack"):
        node_labels(sku, pool, {}, BURNIN, pool_name="p", rack="rack 1")


def test_observed_facts_win_over_the_sku():
    labels = node_labels(SKUS["hgx-h200-141gb"], Pool(), {"gpu_count": 7, "gpu_product": "NVIDIA H200 NVL"},
                         {"status": "passed", "date": "2026-12-01"}, pool_name="p")
    assert labels["nvidia.com/gpu.count"] == "7"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200-NVL"
    assert labels["bringup.io/burnin-date"] == "2026-12-01"


@pytest.mark.parametrize(("pool", "pool_name", "bad_label"), [
    (Pool(fabric="ib ndr400"), "p", "bringup.io/fabric"),
    (Pool(workload="-training"), "p", "bringup.io/workload"),
    (Pool(sharing="x" * 64), "p", "bringup.io/sharing"),
    (Pool(), "pool.", "bringup.io/pool"),
    (Pool(), "", "bringup.io/pool"),
])
def test_an_invalid_value_names_the_label(pool, pool_name, bad_label):
    with pytest.raises(ConfigError) as err:
        node_labels(SKUS["hgx-h100-80gb"], pool, {}, BURNIN, pool_name=pool_name)
    assert bad_label in str(err.value)
    # only the bad label is reported
    assert str(err.value).count("label bringup.io/") == 1


def test_burnin_record_must_be_complete_and_dated():
    with pytest.raises(ConfigError, match="status"):
        node_labels(SKUS["hgx-h100-80gb"], Pool(), {}, {"date": "2026-11-30"}, pool_name="p")
    with pytest.raises(ConfigError, match="burnin-date"):
        node_labels(SKUS["hgx-h100-80gb"], Pool(), {}, {"status": "passed", "date": "yesterday"}, pool_name="p")


@pytest.mark.parametrize(("value", "ok"), [
    ("h100-80gb", True), ("a", True), ("A.b_c-d", True), ("x" * 63, True), ("", True),
    ("x" * 64, False), ("-a", False), ("a-", False), ("a b", False), ("a/b", False), ("ä", False),
])
def test_label_value_syntax(value, ok):
    assert (label_value_problem(value) is None) is ok


def test_label_keys_are_checked_too():
    with pytest.raises(ConfigError, match="Bringup.IO/x"):
        validate_labels({"Bringup.IO/x": "v"})
    validate_labels({"example.com/a-b": "v", "plain": "v"})


def test_quarantine_taint():
    t = quarantine_taint("xid-79")
    assert (t.key, t.value, t.effect) == (QUARANTINE_KEY, "xid-79", "NoSchedule")
    assert str(t) == "bringup.io/quarantine=xid-79:NoSchedule"
    assert t.to_api() == {"key": QUARANTINE_KEY, "value": "xid-79", "effect": "NoSchedule"}
    for bad in ("", "xid 79", "x" * 64):
        with pytest.raises(ConfigError, match="bringup.io/quarantine"):
            quarantine_taint(bad)


def test_reason_code_makes_a_valid_short_value():
    assert reason_code("XID 79 on GPU 2: fell off the bus") == "xid-79-on-gpu-2"
    assert reason_code("!!!") == "unspecified"
    long = reason_code("a very long reason " * 10)
    assert len(long) <= 40 and label_value_problem(long) is None


def test_gpu_product_label():
    assert gpu_product_label("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3"
