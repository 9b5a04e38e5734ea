"""GPU/NIC/NUMA topology checked against the SKU's expected GPU<->NIC map (issue #14, item 2).

What the node reports (collected there: NVML ``nvmlDeviceGetTopologyCommonAncestor`` from
each GPU to each NIC, the GPU's NUMA node and CPU affinity, and sysfs for the NIC side) is
handed in as a :class:`NodeTopology`; the SKU's expectation (``gpu_nic_map`` in its NetBox
config context) as an :class:`ExpectedTopology`. :func:`check_topology` returns findings as
values. A miswired or mis-slotted NIC, or a GPU or NIC on the wrong NUMA node, is a ``fail``
naming GPU and NIC; data that is missing is ``unknown``. Neither is a pass, so both keep the
node from admission.

Levels are NVML's ``nvmlGpuTopologyLevel_t`` with the names ``nvidia-smi topo -m`` prints:
INTERNAL(0) PIX(10) PXB(20) PHB(30) NODE(40) SYS(50). Pure: no I/O.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Level = Literal["INTERNAL", "PIX", "PXB", "PHB", "NODE", "SYS", "unknown"]
Outcome = Literal["pass", "fail", "unknown"]
FindingKind = Literal["miswired_nic", "far_nic", "gpu_numa", "nic_numa", "missing"]

#: NVML's numeric values; a lower value is a closer common ancestor
RANK: dict[str, int] = {"INTERNAL": 0, "PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}

# NVML enum names (nvml.h, pynvml's NVML_TOPOLOGY_*) and the matrix's short names. SOC is
# what drivers before the NODE level printed for SYS.
_ALIASES: dict[str, str] = {
    "INTERNAL": "INTERNAL", "SINGLE": "PIX", "MULTIPLE": "PXB", "HOSTBRIDGE": "PHB",
    "NODE": "NODE", "SYSTEM": "SYS", "PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "SYS": "SYS",
    "SOC": "SYS",
}


def level(token: str | int | None) -> Level:
    """A topology level from NVML's number or name, or the matrix's token; anything else
    is ``unknown`` (never treated as near)."""
    if isinstance(token, bool) or token is None:
        return "unknown"
    if isinstance(token, int):
        by_value = {v: k for k, v in RANK.items()}
        return by_value.get(token, "unknown")  # type: ignore[return-value]
    name = str(token).strip().upper().removeprefix("NVML_TOPOLOGY_")
    return _ALIASES.get(name, "unknown")  # type: ignore[return-value]


def _numa(value: int | None) -> int | None:
    # sysfs numa_node reads -1 where the firmware does not say: that is not node -1
    return None if value is None or value < 0 else value


class NicLink(BaseModel):
    """One GPU's common ancestor with one NIC."""

    model_config = ConfigDict(frozen=True)
    nic: str
    level: Level


class GpuReport(BaseModel):
    """One GPU as the node sees it. ``None`` is "not reported"."""

    index: int = Field(ge=0)
    pci_bus_id: str | None = None
    numa_node: int | None = None
    cpu_affinity: str | None = None
    nics: list[NicLink] = Field(default_factory=list)

    def link(self, nic: str) -> Level:
        return next((n.level for n in self.nics if n.nic == nic), "unknown")


class NicReport(BaseModel):
    """One RDMA NIC from sysfs (``/sys/class/infiniband/mlx5_N/device``)."""

    name: str
    pci_bus_id: str | None = None
    numa_node: int | None = None


class NodeTopology(BaseModel):
    """Everything the node reported; built by the agent or from ``nvidia-smi topo -m``."""

    gpus: list[GpuReport] = Field(default_factory=list)
    nics: list[NicReport] = Field(default_factory=list)

    def gpu(self, index: int) -> GpuReport | None:
        return next((g for g in self.gpus if g.index == index), None)

    def nic(self, name: str) -> NicReport | None:
        return next((n for n in self.nics if n.name == name), None)


class ExpectedPair(BaseModel):
    """GPU ``gpu`` must share a PCIe switch with NIC ``nic``; both sit on NUMA node ``numa``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    gpu: int = Field(ge=0)
    nic: str = Field(min_length=1)
    numa: int = Field(ge=0)


class ExpectedTopology(BaseModel):
    """The SKU's GPU<->NIC map (config context key ``gpu_nic_map``). ``max_level``: the
    farthest level at which the expected NIC still counts as "next to" its GPU."""

    model_config = ConfigDict(extra="forbid")
    max_level: Literal["PIX", "PXB"] = "PXB"
    source: str = ""
    pairs: list[ExpectedPair] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_to_one(self) -> ExpectedTopology:
        for attr in ("gpu", "nic"):
            values = [getattr(p, attr) for p in self.pairs]
            dup = sorted({str(v) for v in values if values.count(v) > 1})
            if dup:
                raise ValueError(f"{attr} {', '.join(dup)} appears in more than one pair")
        return self


class TopologyFinding(BaseModel):
    """One problem. ``outcome`` fail: the hardware is wrong; unknown: the data to decide
    is missing. Both block admission."""

    kind: FindingKind
    outcome: Literal["fail", "unknown"]
    gpu: int | None = None
    nic: str | None = None
    message: str


class TopologyVerdict(BaseModel):
    outcome: Outcome
    findings: list[TopologyFinding] = Field(default_factory=list)

    @property
    def admissible(self) -> bool:
        return self.outcome == "pass"


def _check_pair(node: NodeTopology, pair: ExpectedPair, max_level: str) -> list[TopologyFinding]:
    g, nic = pair.gpu, pair.nic
    gpu = node.gpu(g)
    if gpu is None:
        return [TopologyFinding(kind="missing", outcome="unknown", gpu=g, nic=nic,
                                message=f"GPU{g} was not reported; its NIC {nic} cannot be checked")]
    out: list[TopologyFinding] = []
    expected_level = gpu.link(nic)
    # another NIC strictly nearer than the expected one (ties are allowed: a dual-port NIC
    # shows two functions behind one switch, tests/fixtures/topology/vllm-16359-*.txt)
    nearer = [n for n in gpu.nics if n.nic != nic and n.level != "unknown" and RANK[n.level] <= RANK[max_level]
              and (expected_level == "unknown" or RANK[n.level] < RANK[expected_level])]
    if nearer:
        other = min(nearer, key=lambda n: RANK[n.level])
        at = "not reported" if expected_level == "unknown" else f"at {expected_level}"
        out.append(TopologyFinding(
            kind="miswired_nic", outcome="fail", gpu=g, nic=nic,
            message=f"GPU{g}'s nearest NIC is {other.nic} ({other.level}), expected {nic} ({at}): "
                    "a NIC in the wrong slot or cables swapped"))
    elif expected_level == "unknown":
        out.append(TopologyFinding(kind="missing", outcome="unknown", gpu=g, nic=nic,
                                   message=f"no topology level reported from GPU{g} to {nic}"))
    elif RANK[expected_level] > RANK[max_level]:
        out.append(TopologyFinding(
            kind="far_nic", outcome="fail", gpu=g, nic=nic,
            message=f"GPU{g} reaches its NIC {nic} only at {expected_level} (expected {max_level} or "
                    "nearer): the NIC is not behind the GPU's PCIe switch"))
    gpu_numa = _numa(gpu.numa_node)
    if gpu_numa is None:
        out.append(TopologyFinding(kind="missing", outcome="unknown", gpu=g,
                                   message=f"GPU{g}'s NUMA node was not reported"))
    elif gpu_numa != pair.numa:
        out.append(TopologyFinding(kind="gpu_numa", outcome="fail", gpu=g, nic=nic,
                                   message=f"GPU{g} is on NUMA node {gpu_numa}, expected {pair.numa}"))
    report = node.nic(nic)
    nic_numa = _numa(report.numa_node) if report else None
    if nic_numa is None:
        out.append(TopologyFinding(kind="missing", outcome="unknown", gpu=g, nic=nic,
                                   message=f"NIC {nic} " + ("was not reported" if report is None
                                                           else "has no NUMA node in sysfs")))
    elif nic_numa != pair.numa:
        out.append(TopologyFinding(kind="nic_numa", outcome="fail", gpu=g, nic=nic,
                                   message=f"NIC {nic} (GPU{g}'s rail) is on NUMA node {nic_numa}, "
                                           f"expected {pair.numa}"))
    return out


def check_topology(node: NodeTopology, expected: ExpectedTopology | None) -> TopologyVerdict:
    """Compare what the node reports with the SKU's map: ``pass`` only when every expected
    pair is present, near enough, nearest, and on its NUMA node."""
    if expected is None:
        return TopologyVerdict(outcome="unknown", findings=[TopologyFinding(
            kind="missing", outcome="unknown",
            message="the SKU has no expected GPU<->NIC map (gpu_nic_map in its config context)")])
    findings = [f for pair in expected.pairs for f in _check_pair(node, pair, expected.max_level)]
    outcome: Outcome = ("fail" if any(f.outcome == "fail" for f in findings)
                        else "unknown" if findings else "pass")
    return TopologyVerdict(outcome=outcome, findings=findings)
