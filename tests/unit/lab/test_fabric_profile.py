"""The fabric fault kinds in the node profile, and the figures the multi-node stand-ins
derive from every participant's profile (pure functions; the stand-ins run in
tests/integration/fabric)."""

import importlib.util
from pathlib import Path

import pytest

from bringup.errors import ConfigError
from bringup.sku import load_skus, nic_counts
from lab.fleet import Fault, NodeSpec, loads_fleet
from lab.gpu.profile import nvml_profile, tool_profile

SKU = load_skus()["hgx-h100-80gb"]
VERSIONS = {"driver": "570.133.20", "cuda": "12.8", "nccl": "2.26.2-1+cuda12.8", "kernel": "6.8.0-60-generic"}
_spec = importlib.util.spec_from_file_location(
    "standin_fabric", Path(__file__).parents[3] / "lab/gpu/tools/standin_fabric.py")
fabric = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fabric)


def prof(name: str, *faults: dict) -> dict:
    n = NodeSpec(name=name, rack="r1", sku=SKU.sku, pool="p", bmc_address="127.10.0.1", address="127.20.0.1",
                 faults=[Fault.model_validate(f) for f in faults])
    return tool_profile(n, SKU, VERSIONS, nvml_profile(n, SKU, VERSIONS))


def test_healthy_pair_reaches_the_skus_internode_figure_on_every_rail():
    a, b = prof("a"), prof("b")
    assert fabric.internode_busbw({"a": a, "b": b}) == 372.0
    assert [ca["numa_node"] for ca in a["ib"]] == [0, 0, 0, 0, 1, 1, 1, 1]
    names = [p.nic for p in SKU.gpu_nic_map.pairs]  # the SKU's map names the lab's NICs
    assert [ca["name"] for ca in a["ib"]] == names
    assert {fabric.rail_gbps(a, n, b, n) for n in names} == {392.4}


def test_a_slow_node_slows_every_group_it_is_in():
    slow, b, c = prof("s", {"kind": "slow_node", "value": 210}), prof("b"), prof("c")
    assert fabric.internode_busbw({"s": slow, "b": b}) == 210.0
    assert fabric.internode_busbw({"b": b, "c": c}) == 372.0


def test_a_bad_cable_slows_only_the_two_together_from_either_side():
    a, b, c = prof("a", {"kind": "bad_cable", "other": "b", "value": 60}), prof("b"), prof("c")
    assert fabric.internode_busbw({"a": a, "b": b}) == 60.0
    assert fabric.internode_busbw({"b": b, "a": a}) == 60.0
    assert fabric.internode_busbw({"a": a, "c": c}) == 372.0
    assert fabric.rail_gbps(b, "mlx5_0", a, "mlx5_0") == 60.0  # 60 GB/s over 8 rails: 60 Gb/s each
    assert fabric.rail_gbps(a, "mlx5_0", c, "mlx5_0") == 392.4


def test_a_degraded_rail_is_that_nic_only_with_any_partner():
    a, b = prof("a", {"kind": "degraded_rail", "iface": "cx3", "value": 180}), prof("b")
    assert fabric.rail_gbps(b, "mlx5_5", a, "mlx5_5") == 180.0  # cx3: GPU3's NIC, mlx5_5 on a DGX H100
    assert fabric.rail_gbps(a, "mlx5_4", b, "mlx5_4") == 392.4


def test_a_down_port_takes_its_share_of_the_busbw():
    a, b = prof("a", {"kind": "ib_port_down", "iface": "cx0"}), prof("b")
    assert fabric.internode_busbw({"a": a, "b": b}) == pytest.approx(372.0 * 7 / 8)


def test_nic_numa_and_flapping_port_land_on_their_nic():
    a = prof("a", {"kind": "nic_numa", "iface": "cx2"}, {"kind": "flapping_port", "iface": "mlx5_5", "value": 40})
    assert a["ib"][2]["numa_node"] == 1 and a["ib"][3]["numa_node"] == 0
    assert a["flapping"] == {"mlx5_5": 40} and a["ib"][3]["name"] == "mlx5_5"


def test_a_bad_cable_must_name_another_node_of_the_fleet():
    text = ("site: t\npools: {p: {}}\nnodes:\n"
            "  - {name: a, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.10.0.1, address: 127.20.0.1,\n"
            "     faults: [{kind: bad_cable, other: nobody}]}\n")
    with pytest.raises(ConfigError, match=r"faults\[0\]\.other: a bad cable needs the name of another node"):
        loads_fleet(text, nic_counts(load_skus()))


def node_topology(p: dict):
    """The matrix as the stand-in prints it, plus each NIC's NUMA node as the lab's sysfs
    holds it (``/sys/class/infiniband/<hca>/device/numa_node``, written from the same profile)."""
    from bringup.fabric.topology import NicReport
    from bringup.fabric.topomatrix import parse_topo_matrix

    topo = parse_topo_matrix(fabric.topo_matrix(p))
    return topo.model_copy(update={"nics": [NicReport(name=ca["name"], numa_node=ca["numa_node"]) for ca in p["ib"]]})


def test_topology_standin_shows_a_nic_on_the_wrong_numa_node():
    from bringup.fabric.topology import check_topology

    # the lab models the SKU's own map (DGX names: GPU2's NIC is mlx5_4), so a healthy node passes it
    expected = SKU.gpu_nic_map
    healthy = node_topology(prof("a"))
    assert check_topology(healthy, expected).outcome == "pass"
    assert healthy.gpu(5).numa_node == 1 and healthy.gpu(5).link("mlx5_9") == "PXB"
    moved = node_topology(prof("b", {"kind": "nic_numa", "iface": "cx2"}))
    assert moved.gpu(2).link("mlx5_4") == "SYS" and moved.gpu(6).link("mlx5_4") == "NODE"
    verdict = check_topology(moved, expected)
    assert verdict.outcome == "fail"
    assert {(f.kind, f.gpu, f.nic) for f in verdict.findings} == {("far_nic", 2, "mlx5_4"), ("nic_numa", 2, "mlx5_4")}
