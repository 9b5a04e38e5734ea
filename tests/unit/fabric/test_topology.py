"""GPU/NIC/NUMA topology against the SKU's expected map (bringup.fabric.topology)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bringup.fabric.topology import (
    ExpectedTopology,
    GpuReport,
    NicLink,
    NicReport,
    NodeTopology,
    check_topology,
    level,
)
from bringup.sku import load_skus

SKUS = load_skus()
MAP = SKUS["hgx-h100-80gb"].gpu_nic_map
NICS = [p.nic for p in MAP.pairs] + ["mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"]


def healthy(**nic_level) -> NodeTopology:
    """A DGX H100 as the map expects it: each GPU's rail at PXB, the rest at NODE/SYS.
    ``nic_level`` overrides, e.g. ``{"0:mlx5_0": "NODE"}``."""
    gpus = []
    for p in MAP.pairs:
        links = []
        for nic in NICS:
            other_numa = next((q.numa for q in MAP.pairs if q.nic == nic), 0 if nic in ("mlx5_1", "mlx5_2") else 1)
            lvl = "PXB" if nic == p.nic else ("NODE" if other_numa == p.numa else "SYS")
            links.append(NicLink(nic=nic, level=nic_level.get(f"{p.gpu}:{nic}", lvl)))
        gpus.append(GpuReport(index=p.gpu, pci_bus_id=f"0000:{0x18 + p.gpu:02x}:00.0", numa_node=p.numa,
                              cpu_affinity="0-55,112-167" if p.numa == 0 else "56-111,168-223", nics=links))
    nics = [NicReport(name=p.nic, numa_node=p.numa) for p in MAP.pairs]
    return NodeTopology(gpus=gpus, nics=nics)


def test_both_skus_carry_a_one_to_one_map_of_eight_gpus():
    for sku in ("hgx-h100-80gb", "hgx-h200-141gb"):
        m = SKUS[sku].gpu_nic_map
        assert sorted(p.gpu for p in m.pairs) == list(range(8))
        assert len({p.nic for p in m.pairs}) == 8
        assert m.max_level == "PXB"


def test_healthy_node_passes():
    verdict = check_topology(healthy(), MAP)
    assert verdict.outcome == "pass" and verdict.admissible and verdict.findings == []


def test_swapped_cables_name_gpu_and_both_nics():
    node = healthy(**{"0:mlx5_0": "NODE", "0:mlx5_3": "PXB", "1:mlx5_3": "NODE", "1:mlx5_0": "PXB"})
    verdict = check_topology(node, MAP)
    assert verdict.outcome == "fail" and not verdict.admissible
    assert len(verdict.findings) == 2
    by_gpu = {f.gpu: f for f in verdict.findings}
    assert set(by_gpu) == {0, 1}
    assert by_gpu[0].kind == "miswired_nic" and by_gpu[0].nic == "mlx5_0"
    assert "mlx5_3 (PXB)" in by_gpu[0].message and "expected mlx5_0 (at NODE)" in by_gpu[0].message


def test_nic_only_at_host_bridge_is_a_far_nic():
    verdict = check_topology(healthy(**{"5:mlx5_9": "PHB"}), MAP)
    [f] = verdict.findings
    assert (f.kind, f.outcome, f.gpu, f.nic) == ("far_nic", "fail", 5, "mlx5_9")
    assert "only at PHB" in f.message


def test_pix_is_near_enough_and_a_tie_is_not_a_miswire():
    # two functions of a dual-port NIC behind the GPU's switch (the 16359 fixture's shape)
    node = healthy(**{"2:mlx5_4": "PIX", "2:mlx5_1": "PIX"})
    assert check_topology(node, MAP).outcome == "pass"


def test_a_nearer_other_nic_is_a_miswire_even_when_the_expected_one_is_near():
    verdict = check_topology(healthy(**{"2:mlx5_1": "PIX"}), MAP)
    [f] = verdict.findings
    assert f.kind == "miswired_nic" and "mlx5_1 (PIX)" in f.message


def test_gpu_and_nic_on_the_wrong_numa_node():
    node = healthy()
    node.gpus[3].numa_node = 1
    node.nics[6] = NicReport(name="mlx5_10", numa_node=0)
    verdict = check_topology(node, MAP)
    kinds = {(f.kind, f.gpu, f.nic) for f in verdict.findings}
    assert kinds == {("gpu_numa", 3, "mlx5_5"), ("nic_numa", 6, "mlx5_10")}
    assert verdict.outcome == "fail"


@pytest.mark.parametrize("mutate, message", [
    (lambda n: n.gpus.pop(7), "GPU7 was not reported"),
    (lambda n: setattr(n.gpus[0], "numa_node", None), "GPU0's NUMA node was not reported"),
    (lambda n: n.nics.pop(0), "NIC mlx5_0 was not reported"),
    (lambda n: setattr(n, "nics", [NicReport(name=x.name, numa_node=-1) for x in n.nics]), "no NUMA node in sysfs"),
    (lambda n: setattr(n.gpus[4], "nics", [x for x in n.gpus[4].nics if x.nic != "mlx5_6"]),
     "no topology level reported from GPU4 to mlx5_6"),
    (lambda n: setattr(n.gpus[4], "nics", [NicLink(nic="mlx5_6", level="unknown")]),
     "no topology level reported from GPU4 to mlx5_6"),
])
def test_missing_data_is_unknown_never_a_pass(mutate, message):
    node = healthy()
    mutate(node)
    verdict = check_topology(node, MAP)
    assert verdict.outcome == "unknown" and not verdict.admissible
    assert any(message in f.message and f.outcome == "unknown" for f in verdict.findings), verdict.findings


def test_no_map_for_the_sku_is_unknown():
    verdict = check_topology(healthy(), None)
    assert verdict.outcome == "unknown" and "gpu_nic_map" in verdict.findings[0].message


@pytest.mark.parametrize("token, want", [
    ("PIX", "PIX"), ("SINGLE", "PIX"), ("NVML_TOPOLOGY_MULTIPLE", "PXB"), (30, "PHB"),
    ("node", "NODE"), ("SYSTEM", "SYS"), ("SOC", "SYS"), (0, "INTERNAL"),
    ("NV18", "unknown"), ("X", "unknown"), ("", "unknown"), (15, "unknown"), (None, "unknown"), (True, "unknown"),
])
def test_levels_from_nvml_and_matrix_tokens(token, want):
    assert level(token) == want


def test_expected_map_rejects_a_nic_given_twice():
    with pytest.raises(ValidationError, match="nic mlx5_0 appears in more than one pair"):
        ExpectedTopology(pairs=[{"gpu": 0, "nic": "mlx5_0", "numa": 0}, {"gpu": 1, "nic": "mlx5_0", "numa": 0}])
    with pytest.raises(ValidationError, match="max_level"):
        ExpectedTopology(max_level="NODE", pairs=[{"gpu": 0, "nic": "mlx5_0", "numa": 0}])
