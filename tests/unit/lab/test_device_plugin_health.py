"""What the lab's device plugin advertises after an XID on a serving node (lab/inject.py):
NVIDIA's plugin marks a GPU unhealthy after an XID it does not ignore (the ignored list is
data, lab/gpu/device_plugin.yaml, from its internal/rm/health.go), and the kubelet drops
it from allocatable, not from capacity. Pure: faults in, counts out; ``replug`` without a
lab Kubernetes does nothing and opens no socket."""

from __future__ import annotations

import pytest

from lab.fleet import Fault, FaultKind, NodeSpec
from lab.inject import (
    DEVICE_PLUGIN_DATA,
    ignored_xids,
    plugin_gpus,
    replug,
    unhealthy_gpus,
    whole_gpus_only,
)

IGNORED = ignored_xids()


def xid(code, gpu=None) -> Fault:
    return Fault(kind=FaultKind.XID, value=code, gpu=gpu)


def test_the_ignored_xids_are_the_plugin_s_application_errors():
    assert ignored_xids() == {13, 31, 43, 45, 68, 109}
    assert "internal/rm/health.go" in DEVICE_PLUGIN_DATA.read_text()


def test_each_gpu_with_a_critical_xid_counts_once():
    faults = [xid(79, 3), xid(48, 3), xid(13, 5), xid(94, 6), Fault(kind=FaultKind.ECC_UNCORRECTABLE, gpu=1)]
    assert unhealthy_gpus(faults, IGNORED) == {3, 6}
    assert plugin_gpus(8, faults, IGNORED) == (8, 6)


@pytest.mark.parametrize("code", sorted({13, 31, 43, 45, 68, 109}))
def test_an_application_xid_leaves_the_gpu_healthy(code):
    assert plugin_gpus(8, [xid(code, 2)], IGNORED) == (8, 8)


def test_an_xid_without_code_or_gpu_is_the_profile_s_79_on_gpu_0():
    assert unhealthy_gpus([Fault(kind=FaultKind.XID)], IGNORED) == {0}
    assert unhealthy_gpus([xid("not-a-code", 4)], IGNORED) == {4}   # a code it cannot read is not ignored


def test_a_plugin_that_found_fewer_gpus_hands_out_fewer_still():
    short = Fault(kind=FaultKind.DEVICE_PLUGIN_SHORT, value=7)
    assert plugin_gpus(8, [short], IGNORED) == (7, 7)
    assert plugin_gpus(8, [short, xid(79, 2)], IGNORED) == (7, 6)
    assert plugin_gpus(8, [short, xid(79, 7)], IGNORED) == (7, 7)   # GPU 7 is the one it never found
    assert plugin_gpus(8, [Fault(kind=FaultKind.DEVICE_PLUGIN_SHORT)], IGNORED) == (7, 7)
    assert plugin_gpus(2, [xid(79, 0), xid(79, 1), xid(79, 2)], IGNORED) == (2, 0)
    assert plugin_gpus(8, [], IGNORED) == (8, 8)


@pytest.mark.parametrize("labels, capacity, whole", [
    ({}, {"nvidia.com/gpu": "8"}, True),
    ({"bringup.io/sharing": "exclusive", "nvidia.com/gpu.sharing-strategy": "none"}, {"nvidia.com/gpu": "8"}, True),
    ({"bringup.io/sharing": "time-slicing"}, {"nvidia.com/gpu": "32"}, False),
    ({"nvidia.com/gpu.sharing-strategy": "time-slicing"}, {"nvidia.com/gpu": "32"}, False),
    ({}, {"nvidia.com/gpu.shared": "32"}, False),
    ({"nvidia.com/mig.strategy": "single"}, {"nvidia.com/gpu": "56"}, False),
    ({}, {"nvidia.com/gpu": "1", "nvidia.com/mig-1g.18gb": "14"}, False),
])
def test_only_a_node_of_whole_gpus_is_counted(labels, capacity, whole):
    assert whole_gpus_only(labels, capacity) is whole


def test_without_a_lab_kubernetes_nothing_is_set(tmp_path):
    node = NodeSpec(name="n1", rack="r1", sku="hgx-h100-80gb", pool="p", bmc_address="127.0.0.9",
                    address="127.0.0.8", faults=[xid(79, 3)])
    assert replug(tmp_path, node, 8) is None
