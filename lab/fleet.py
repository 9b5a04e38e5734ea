"""The fleet profile: one YAML file describing a (simulated) site.

It lists racks, nodes, their SKU, BMC and node addresses, NIC MACs, node pools and the
faults injected into each node's simulated hardware. ``bringup lab seed`` (lab/seed.py) writes it
to NetBox; the BMC simulator, the simulated nodes, the NVML stand-in and the tool stand-ins
read the same file, so one profile drives the whole lab.

Validation errors name the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bringup.admission.pool import Pool
from bringup.errors import ConfigError
from bringup.yamlio import LocatedYaml, load_file, load_text, validation_error

MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")

#: interface names every node has, in NetBox and in the simulated BMC; the SKU's
#: device type says how many compute NICs (``cx0``...) there are
BMC_IFACE = "bmc"
MGMT_IFACE = "mgmt0"


class FaultKind(StrEnum):
    """Every fault the lab can inject. Each has an end-to-end test."""

    # Redfish / BMC
    MISSING_GPU = "missing_gpu"              # gpu: index that is absent
    MAC_MISMATCH = "mac_mismatch"            # iface: the BMC reports another MAC
    NIC_SWAPPED = "nic_swapped"              # iface + other: MACs swapped between two ports
    BIOS_DRIFT = "bios_drift"                # attribute + value observed at discovery
    BIOS_NOT_APPLIED = "bios_not_applied"    # attribute: a PATCH that silently never takes
    BMC_SLOW = "bmc_slow"                    # value: seconds added to every response
    BMC_TIMEOUT = "bmc_timeout"              # BMC accepts but never answers
    BMC_500 = "bmc_500"                      # every request answers 500
    BMC_401 = "bmc_401"                      # credentials refused
    MEMBER_404 = "member_404"                # iface or gpu: listed in its collection, answers 404
    FC_PORT = "fc_port"                      # an extra Fibre Channel HBA whose port holds a WWPN
    MAC_NOT_AVAILABLE = "mac_not_available"  # iface: the host interface's MACAddress is "Not Available"
    CHIPSET_FUNCTION = "chipset_function"    # an onboard AMD "MultiFunction" PCIe device (no GPU)
    BIOS_SECOND_RESET = "bios_second_reset"  # staged BIOS settings apply only at the second POST
    BOOT_FAIL = "boot_fail"                  # the virtual-media boot fails; the BMC logs it
    FIRMWARE_DRIFT = "firmware_drift"        # attribute: FirmwareInventory Id; value: the old version it runs
    # BMC health, injectable at runtime (`bringup lab inject`; the running bmcsim reads the
    # node's injected.json): the health watch reads them from the BMC (lab/bmcsim/health_docs.py)
    PSU_LOST = "psu_lost"                    # value: PSU index (0 when absent): State UnavailableOffline, Health Critical
    LEAK = "leak"                            # value: leak detector Id (the first when absent): DetectorState Critical
    SEL_ENTRY = "sel_entry"                  # value: message; a new Critical SEL entry, logged when the BMC sees it
    SENSOR_OVER = "sensor_over"              # value: sensor Id or ReadingType (Inlet temp when absent): past UpperCritical
    # GPU health (NVML stand-in, DCGM / gpu-burn stand-ins)
    ECC_OFF = "ecc_off"
    ECC_PENDING = "ecc_pending"              # pending mode differs from current
    ECC_UNCORRECTABLE = "ecc_uncorrectable"  # value: count
    ECC_AGGREGATE = "ecc_aggregate"          # value: lifetime uncorrectable count, none this run
    ROW_REMAP_PENDING = "row_remap_pending"
    ROW_REMAP_FAILURE = "row_remap_failure"
    XID = "xid"                              # value: XID code, e.g. 79 or 48
    PCIE_DOWNTRAINED = "pcie_downtrained"    # value: width or "gen3"
    NVLINK_DOWN = "nvlink_down"              # link: index
    NVLINK_ERRORS = "nvlink_errors"          # link + value: replay/CRC count
    THERMAL_SLOWDOWN = "thermal_slowdown"
    POWER_BRAKE = "power_brake"
    DCGM_FAIL = "dcgm_fail"                  # test: dcgm test name
    DCGM_SKIP = "dcgm_skip"
    GPUBURN_FAULTY = "gpuburn_faulty"
    GPUBURN_NO_START = "gpuburn_no_start"    # gpu: its gpu-burn test cannot start (0 work, says OK)
    GPU_SERIAL_SWAPPED = "gpu_serial_swapped"  # gpu: NVML reports another serial than the BMC did
    # gpu: index (every GPU when absent): its MIG mode stays pending, as when the reset a mode
    # change needs cannot be done now; NVML's SetMigMode answers activation RESET_REQUIRED
    MIG_PENDING = "mig_pending"
    # NCCL / fabric
    LOW_BUSBW = "low_busbw"                  # value: GB/s at the largest sizes
    NCCL_WRONG = "nccl_wrong"                # value: #wrong count
    NCCL_DIES = "nccl_dies"                  # value: rows printed before "Test NCCL failure" and a non-zero exit
    NCCL_CUT = "nccl_cut"                    # value: rows printed before the output stops (no summary), exit 0
    IB_PORT_DOWN = "ib_port_down"            # iface / port index
    IB_WRONG_SPEED = "ib_wrong_speed"        # value: Gb/s
    # multi-node fabric (mpirun all_reduce_perf and ib_write_bw stand-ins)
    SLOW_NODE = "slow_node"                  # value: inter-node busbw GB/s of any test it takes part in
    BAD_CABLE = "bad_cable"                  # other: partner node; value: GB/s busbw of the two together
    DEGRADED_RAIL = "degraded_rail"          # iface: cxN; value: its ib_write_bw Gb/s with any partner
    NIC_NUMA = "nic_numa"                    # iface: cxN sits on the other NUMA node than its GPU
    FLAPPING_PORT = "flapping_port"          # iface: cxN; value: symbol errors added per fabric test
    # software on the node
    DRIVER_DRIFT = "driver_drift"            # value: driver version actually installed
    NCCL_DRIFT = "nccl_drift"                # value: NCCL version actually installed
    MISSING_TOOL = "missing_tool"            # value: tool name (dcgmi, all_reduce_perf, ...)
    TOOL_HANGS = "tool_hangs"                # value: tool name
    GARBAGE_OUTPUT = "garbage_output"        # value: tool name
    TRUNCATED_OUTPUT = "truncated_output"    # value: tool name; its output stops part-way, exit 0
    # provisioning
    NEVER_RETURNS = "never_returns"          # node never comes back after the OS install
    # cluster
    DEVICE_PLUGIN_SHORT = "device_plugin_short"  # value: the GPU count the device plugin advertises
    CONTAINER_NVML_BROKEN = "container_nvml_broken"  # in containers NVML fails ("Unknown Error"), on the host not
    SSH_DROP = "ssh_drop"                    # SSH connection dropped mid burn-in


class Fault(BaseModel):
    """One injected fault; which optional fields matter depends on ``kind``."""

    model_config = ConfigDict(extra="forbid")

    kind: FaultKind
    gpu: int | None = Field(default=None, ge=0, le=15)
    link: int | None = Field(default=None, ge=0, le=17)
    iface: str | None = None
    other: str | None = None
    attribute: str | None = None
    test: str | None = None
    value: float | int | str | None = None
    note: str = ""


class NodeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    rack: str
    sku: str
    pool: str
    serial: str = ""
    bmc_address: str
    bmc_port: int = Field(default=8443, ge=1, le=65535)
    address: str                     # the node's own (management) address
    ssh_port: int = Field(default=2222, ge=1, le=65535)
    macs: dict[str, str] = Field(default_factory=dict)
    #: the BMC simulator's vendor profile (lab/bmcsim/vendors/<name>.yaml)
    bmc_vendor: str = "bmcsim"
    faults: list[Fault] = Field(default_factory=list)

    @field_validator("name", "rack")
    @classmethod
    def _dns_name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("must be lower-case letters, digits and '-' (a DNS label)")
        return v

    @field_validator("bmc_vendor")
    @classmethod
    def _vendor(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("must name a profile in lab/bmcsim/vendors (lower-case letters, digits, '-')")
        return v

    @field_validator("bmc_address", "address")
    @classmethod
    def _loopback(cls, v: str) -> str:
        try:
            ip = ipaddress.IPv4Address(v)
        except ValueError:
            raise ValueError(f"{v!r} is not an IPv4 address") from None
        if not ip.is_loopback:
            # the lab only ever listens on this machine
            raise ValueError(f"{v} is not a loopback address (use 127.x.y.z)")
        return v

    @field_validator("macs")
    @classmethod
    def _macs(cls, v: dict[str, str]) -> dict[str, str]:
        out = {}
        for iface, mac in v.items():
            m = str(mac).lower().replace("-", ":")
            if not MAC_RE.match(m):
                raise ValueError(f"{iface}: {mac!r} is not a MAC address like 02:00:00:aa:bb:cc")
            out[iface] = m
        return out

    @model_validator(mode="after")
    def _defaults(self) -> NodeSpec:
        if not self.serial:
            self.serial = "SN" + hashlib.sha256(self.name.encode()).hexdigest()[:10].upper()
        return self

    def faults_of(self, kind: FaultKind | str) -> list[Fault]:
        return [f for f in self.faults if f.kind == kind]

    def has_fault(self, kind: FaultKind | str) -> bool:
        return any(f.kind == kind for f in self.faults)

    def interface_names(self, compute_nics: int) -> list[str]:
        return [BMC_IFACE, MGMT_IFACE] + [f"cx{i}" for i in range(compute_nics)]

    def mac_of(self, iface: str) -> str:
        """The MAC NetBox should hold for ``iface``: given in the profile, else derived
        deterministically (locally administered, so it never collides with a vendor OUI)."""
        if iface in self.macs:
            return self.macs[iface]
        digest = hashlib.sha256(f"{self.name}/{iface}".encode()).digest()
        return "02:" + ":".join(f"{b:02x}" for b in digest[:5])


class FleetProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    site: str
    region: str = ""
    pools: dict[str, Pool]
    nodes: list[NodeSpec] = Field(min_length=1)

    @field_validator("site")
    @classmethod
    def _site(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("must be lower-case letters, digits and '-'")
        return v

    def node(self, name: str) -> NodeSpec:
        for n in self.nodes:
            if n.name == name:
                return n
        raise ConfigError(f"node {name!r} is not in the fleet profile of site {self.site}",
                          hint="check the name against `bringup lab status`")

    @property
    def racks(self) -> list[str]:
        return sorted({n.rack for n in self.nodes})


def _vendor_profiles() -> list[str] | None:
    """Names of the BMC simulator's vendor profiles (None where the folder is absent)."""
    folder = Path(__file__).with_name("bmcsim") / "vendors"
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else None


def _cross_checks(fleet: FleetProfile, doc: LocatedYaml, known_skus: dict[str, int] | None) -> list[str]:
    """Checks that span nodes: unique names/addresses/MACs, known SKUs and pools."""
    problems: list[str] = []
    seen: dict[tuple[str, Any], int] = {}
    vendors = _vendor_profiles()

    def unique(kind: str, value: Any, i: int, field: str) -> None:
        key = (kind, value)
        if key in seen:
            j = seen[key]
            problems.append(f"  {doc.where(('nodes', i, field))} nodes[{i}].{field}: {kind} {value} "
                            f"is already used by nodes[{j}] ({fleet.nodes[j].name})")
        else:
            seen[key] = i

    for i, n in enumerate(fleet.nodes):
        unique("name", n.name, i, "name")
        unique("serial", n.serial, i, "serial")
        unique("BMC endpoint", f"{n.bmc_address}:{n.bmc_port}", i, "bmc_address")
        unique("node endpoint", f"{n.address}:{n.ssh_port}", i, "address")
        if n.pool not in fleet.pools:
            problems.append(f"  {doc.where(('nodes', i, 'pool'))} nodes[{i}].pool: unknown pool {n.pool!r}; "
                            f"pools are: {', '.join(sorted(fleet.pools))}")
        nics = 8
        if known_skus is not None:
            if n.sku not in known_skus:
                problems.append(f"  {doc.where(('nodes', i, 'sku'))} nodes[{i}].sku: unknown SKU {n.sku!r}; "
                                f"known SKUs: {', '.join(sorted(known_skus))}")
            else:
                nics = known_skus[n.sku]
        if vendors is not None and n.bmc_vendor not in vendors:
            problems.append(f"  {doc.where(('nodes', i, 'bmc_vendor'))} nodes[{i}].bmc_vendor: unknown BMC "
                            f"vendor profile {n.bmc_vendor!r}; profiles are: {', '.join(vendors)}")
        names = n.interface_names(nics)
        for iface in n.macs:
            if iface not in names:
                problems.append(f"  {doc.where(('nodes', i, 'macs', iface))} nodes[{i}].macs.{iface}: "
                                f"no such interface; this SKU has {', '.join(names)}")
        for iface in names:
            mac = n.mac_of(iface)
            key = ("MAC", mac)
            if key in seen:
                j = seen[key]
                problems.append(f"  {doc.where(('nodes', i, 'macs', iface))} nodes[{i}].macs.{iface}: "
                                f"MAC {mac} is already used by nodes[{j}] ({fleet.nodes[j].name})")
            else:
                seen[key] = i
        for k, f in enumerate(n.faults):
            if f.kind == FaultKind.BAD_CABLE and (f.other not in {m.name for m in fleet.nodes} or f.other == n.name):
                problems.append(f"  {doc.where(('nodes', i, 'faults', k, 'other'))} nodes[{i}].faults[{k}].other: "
                                f"a bad cable needs the name of another node of the fleet, not {f.other!r}")
    return problems


def parse_fleet(doc: LocatedYaml, known_skus: dict[str, int] | None = None) -> FleetProfile:
    """Validate a loaded document. ``known_skus`` maps SKU slug -> compute NIC count."""
    if not isinstance(doc.data, dict):
        raise ConfigError(f"{doc.source}: a fleet profile is a mapping with site, pools and nodes",
                          hint="see lab/fleets/default.yaml for an example")
    try:
        fleet = FleetProfile.model_validate(doc.data)
    except ValidationError as exc:
        raise validation_error(exc, doc, "fleet profile") from None
    problems = _cross_checks(fleet, doc, known_skus)
    if problems:
        raise ConfigError(f"fleet profile {doc.source} is invalid:\n" + "\n".join(problems),
                          hint="fix the fields listed above")
    return fleet


def load_fleet(path: str | Path, known_skus: dict[str, int] | None = None) -> FleetProfile:
    return parse_fleet(load_file(path), known_skus)


def loads_fleet(text: str, known_skus: dict[str, int] | None = None, source: str = "<string>") -> FleetProfile:
    return parse_fleet(load_text(text, source), known_skus)
