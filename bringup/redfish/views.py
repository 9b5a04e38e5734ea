"""What bringup works with after reading a BMC: the inventory and action results.

Plain pydantic models, serialisable for NetBox journal entries and the CLI's JSON. A
member the BMC lists but that could not be read or understood is an :class:`Unavailable`
entry (a finding about that member), never a silent gap and never the end of the
inventory.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

UnavailableKind = Literal["not_found", "error", "invalid", "unclassified", "not_ethernet"]


class SystemInfo(BaseModel):
    id: str
    manufacturer: str | None = None
    model: str | None = None
    serial: str | None = None
    sku: str | None = None
    uuid: str | None = None
    bios_version: str | None = None
    power_state: str | None = None


class Cpu(BaseModel):
    id: str
    model: str | None = None
    cores: int | None = None


class Dimm(BaseModel):
    id: str
    capacity_mib: int | None = None
    ecc: str | None = None


class Gpu(BaseModel):
    id: str
    model: str | None = None
    manufacturer: str | None = None
    serial: str | None = None
    uuid: str | None = None
    memory_mib: int | None = None
    ecc_enabled: bool | None = None
    health: str | None = None
    source: str = "Processors"     # or "PCIeDevices" (fallback when no GPU processors)
    uri: str = ""


class Nic(BaseModel):
    id: str
    mac: str
    link: str | None = None
    speed_mbps: int | None = None
    owner: str = "system"          # system | manager | adapter
    uri: str = ""
    #: physical place of the port, (slot ordinal, port ordinal), when the BMC says it: what
    #: NetBox's cx0..cxN order means, independent of how the BMC names its ports
    position: tuple[int, int] | None = None


class Software(BaseModel):
    """One FirmwareInventory member: what runs on a component, and where to update it."""

    id: str
    name: str | None = None
    version: str | None = None
    uri: str = ""
    updateable: bool | None = None


class Unavailable(BaseModel):
    """One member or resource the BMC links to that is missing from the inventory, and why."""

    uri: str
    kind: UnavailableKind
    reason: str
    path: str | None = None       # JSON path of the offending field, for "invalid"


class Inventory(BaseModel):
    """Everything discovery reads from one BMC."""

    address: str
    system: SystemInfo
    #: every ComputerSystem the BMC lists (an HGX baseboard is a second one)
    systems: list[str] = Field(default_factory=list)
    cpus: list[Cpu] = Field(default_factory=list)
    memory: list[Dimm] = Field(default_factory=list)
    gpus: list[Gpu] = Field(default_factory=list)
    nics: list[Nic] = Field(default_factory=list)
    firmware: list[tuple[str, str]] = Field(default_factory=list)
    #: the FirmwareInventory members in full (``firmware`` is their (name, version) view)
    software: list[Software] = Field(default_factory=list)
    bios: dict[str, Any] = Field(default_factory=dict)
    #: members the BMC links to but that could not be read or understood
    unavailable: list[Unavailable] = Field(default_factory=list)

    @property
    def memory_mib(self) -> int:
        return sum(d.capacity_mib or 0 for d in self.memory)

    def nic_by_mac(self) -> dict[str, Nic]:
        return {n.mac: n for n in self.nics}

    def knows_gpu(self, gpu: Gpu) -> bool:
        """The same board seen before (through the host and through its baseboard)."""
        return any((gpu.serial and g.serial == gpu.serial) or (gpu.uuid and g.uuid == gpu.uuid) for g in self.gpus)

    def note(self, uri: str, kind: UnavailableKind, reason: str, path: str | None = None) -> None:
        self.unavailable.append(Unavailable(uri=uri, kind=kind, reason=reason, path=path))


class BiosResult(BaseModel):
    """Outcome of :meth:`Bmc.apply_bios`: what did not take once the BMC said it applied."""

    wanted: dict[str, Any]
    observed: dict[str, Any]
    not_applied: dict[str, tuple[Any, Any]] = Field(default_factory=dict)
    #: attributes the BMC still holds as pending (staged, not yet applied) at read-back
    pending: dict[str, Any] = Field(default_factory=dict)
    rebooted: bool = False
    resets: int = 0
    #: the config job or task that applied the settings, with its final state
    job: str | None = None
    job_state: str | None = None
    messages: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.not_applied
