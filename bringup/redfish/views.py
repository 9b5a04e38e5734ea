"""What bringup works with after reading a BMC: the inventory and action results.

Plain pydantic models, serialisable for NetBox journal entries and the CLI's JSON. A
member the BMC lists but that could not be read or understood is an :class:`Unavailable`
entry (a finding about that member), never a silent gap and never the end of the
inventory.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

#: ``gpus_unreadable``: no GPU could be read from any place this BMC lists them (systems'
#: Processors, chassis' PCIe devices, the vendor resources its quirks name): whether the
#: server has none or the BMC does not say is unknown, never "0 GPUs"
UnavailableKind = Literal["not_found", "error", "invalid", "unclassified", "not_ethernet", "gpus_unreadable"]


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
    source: str = "Processors"     # or "PCIeDevices", or a vendor resource (fallbacks, in that order)
    uri: str = ""
    #: the serial is a placeholder ("0000000000000", "N/A", ""), not the board's
    serial_placeholder: bool = False


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
        """The same GPU seen before: the same resource, or the same GPU UUID (one GPU listed by
        the host and by its baseboard). Never the serial alone: GPUs of one board report the
        board's serial, and some BMCs give every module a placeholder; two such GPUs are two."""
        return any(g.uri == gpu.uri or (gpu.uuid and _real(gpu.uuid) and g.uuid == gpu.uuid) for g in self.gpus)

    def identical_serials(self) -> dict[str, list[str]]:
        """Serial -> the GPUs (ids) that report it, for every serial more than one GPU reports
        (a board's serial on each of its GPUs, or a placeholder): a finding, not one GPU."""
        groups: dict[str, list[str]] = {}
        for g in self.gpus:
            if g.serial is not None:
                groups.setdefault(g.serial.strip(), []).append(g.id)
        return {serial: ids for serial, ids in groups.items() if len(ids) > 1}

    @property
    def gpus_unreadable(self) -> Unavailable | None:
        """The entry saying GPUs could not be read from this BMC, if there is one."""
        return next((u for u in self.unavailable if u.kind == "gpus_unreadable"), None)

    def note(self, uri: str, kind: UnavailableKind, reason: str, path: str | None = None) -> None:
        self.unavailable.append(Unavailable(uri=uri, kind=kind, reason=reason, path=path))


def _real(value: str) -> bool:
    """A UUID that identifies something: not empty, not all zeros."""
    return any(c not in "0-{} " for c in value)


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
