"""``nvidia-smi topo -m`` parser (bringup.fabric.topomatrix), on recorded outputs
(tests/fixtures/topology/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.errors import ParseError
from bringup.fabric.topology import ExpectedPair, ExpectedTopology, check_topology
from bringup.fabric.topomatrix import parse_topo_matrix

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "topology"
H100 = (FIX / "vllm-16359-h100-gpu-rows.txt").read_text()

# a small matrix in the space-separated layout of newer drivers, with a NIC legend
SMALL = """\
        GPU0    GPU1    NIC0    NIC1    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV18    PIX     SYS     0-55,112-167    0               N/A
GPU1    NV18     X      SYS     PXB     56-111,168-223  1               N/A
NIC0    PIX     SYS      X      SYS
NIC1    SYS     PXB     SYS      X

Legend:

  X    = Self
  PIX  = Connection traversing at most a single PCIe bridge

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_3
"""


def test_recorded_h100_matrix():
    topo = parse_topo_matrix(H100)
    assert [g.index for g in topo.gpus] == list(range(8))
    assert [n.name for n in topo.nics] == [f"NIC{i}" for i in range(18)]  # no legend in the record
    near = {g.index: [n.nic for n in g.nics if n.level == "PXB"] for g in topo.gpus}
    assert near == {0: ["NIC0", "NIC1"], 1: ["NIC3", "NIC4"], 2: ["NIC5", "NIC6"], 3: ["NIC7", "NIC8"],
                    4: ["NIC9", "NIC10"], 5: ["NIC12", "NIC13"], 6: ["NIC14", "NIC15"], 7: ["NIC16", "NIC17"]}
    assert [g.numa_node for g in topo.gpus] == [0] * 4 + [1] * 4
    assert topo.gpus[5].cpu_affinity == "56-111,168-223"
    assert all(len(g.nics) == 18 and all(n.level != "unknown" for n in g.nics) for g in topo.gpus)


def test_recorded_h100_checked_against_its_own_map_lacks_only_nic_numa():
    # the matrix has no NIC NUMA node: that is unknown, not a pass
    expected = ExpectedTopology(pairs=[ExpectedPair(gpu=g, nic=f"NIC{n}", numa=g // 4)
                                       for g, n in enumerate((0, 3, 5, 7, 9, 12, 14, 16))])
    verdict = check_topology(parse_topo_matrix(H100), expected)
    assert verdict.outcome == "unknown"
    assert {f.kind for f in verdict.findings} == {"missing"}
    assert all("has no NUMA node" in f.message or "was not reported" in f.message for f in verdict.findings)


def test_recorded_h100_against_a_wrong_map_names_the_miswire():
    expected = ExpectedTopology(pairs=[ExpectedPair(gpu=0, nic="NIC3", numa=0)])
    [f, *_] = check_topology(parse_topo_matrix(H100), expected).findings
    assert f.kind == "miswired_nic" and "GPU0's nearest NIC is NIC0 (PXB), expected NIC3 (at NODE)" in f.message


def test_legend_names_nics_and_unknown_tokens_stay_unknown():
    topo = parse_topo_matrix(SMALL.replace("GPU1    NV18     X      SYS     PXB", "GPU1    NV18     X      SYS     ???"))
    assert [n.name for n in topo.nics] == ["mlx5_0", "mlx5_3"]
    assert [(n.nic, n.level) for n in topo.gpus[0].nics] == [("mlx5_0", "PIX"), ("mlx5_3", "SYS")]
    assert topo.gpus[1].link("mlx5_3") == "unknown"
    assert topo.gpus[1].numa_node == 1


def test_old_layout_with_mlx5_columns_and_no_numa_column():
    text = ("\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"
            "GPU0\t X \tNV1\tPIX\t0-19\n"
            "GPU1\tNV1\t X \tSOC\t20-39\n")
    topo = parse_topo_matrix(text)
    assert [(g.index, g.link("mlx5_0"), g.numa_node, g.cpu_affinity) for g in topo.gpus] == [
        (0, "PIX", None, "0-19"), (1, "SYS", None, "20-39")]


def test_excerpt_without_header_is_a_parse_error():
    with pytest.raises(ParseError, match="no header line"):
        parse_topo_matrix((FIX / "vllm-6746-dgx-h100-excerpt.txt").read_text())


@pytest.mark.parametrize("cut, message", [
    (lambda t: t.replace("GPU1    NV18     X      SYS     PXB     56-111,168-223  1               N/A\n", ""),
     "no row for GPU1"),
    (lambda t: t.replace("GPU0     X      NV18    PIX     SYS", "GPU0     X      NV18    PIX"),
     "row GPU0 has 6 cells; the header has 4 device columns and 3 affinity/NUMA fields"),
    (lambda t: t.replace("GPU1    NV18     X      SYS     PXB     56-111,168-223  1               N/A", "GPU1 X"),
     "column GPU1 is missing"),
    (lambda t: "NIC0 NIC1\n", "no header line"),
])
def test_odd_input_names_what_is_missing(cut, message):
    with pytest.raises(ParseError) as exc:
        parse_topo_matrix(cut(SMALL))
    assert message in str(exc.value)
