"""Typed views of the Redfish documents bringup reads, and the inventory built from them.

``parse(model, doc, uri)`` validates one JSON document; a missing or malformed field
raises :class:`bringup.errors.ParseError` naming the resource URI and the JSON path
(``/redfish/v1/Systems/1/EthernetInterfaces/cx0 $.MACAddress``). Only fields bringup
relies on are required; everything vendors commonly omit is optional.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bringup.errors import ParseError

MAC_RE = re.compile(r"^[0-9a-f]{2}([:-][0-9a-f]{2}){5}$", re.IGNORECASE)


def normalise_mac(value: Any) -> str:
    if not isinstance(value, str) or not MAC_RE.match(value.strip()):
        raise ValueError(f"{value!r} is not a MAC address")
    return value.strip().lower().replace("-", ":")


def _json_path(loc: tuple[Any, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def parse[M: BaseModel](model: type[M], doc: Any, uri: str) -> M:
    """Validate ``doc`` (a decoded JSON body from ``uri``) as ``model``."""
    if not isinstance(doc, dict):
        raise ParseError(f"expected a JSON object, got {type(doc).__name__}", path="$", source=uri,
                         hint="the BMC returned something that is not a Redfish resource")
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        problem = "is missing" if err["type"] == "missing" else err["msg"]
        raise ParseError(f"{problem}", path=_json_path(tuple(err["loc"])), source=uri,
                         hint="the BMC's resource does not follow the Redfish schema; check its firmware") from None


class _Doc(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Link(_Doc):
    odata_id: str = Field(alias="@odata.id")


class StatusDoc(_Doc):
    State: str | None = None
    Health: str | None = None


# --- documents as the BMC sends them ------------------------------------------------------
class ServiceRootDoc(_Doc):
    RedfishVersion: str | None = None
    Vendor: str | None = None
    Systems: Link
    Chassis: Link | None = None
    Managers: Link | None = None
    UpdateService: Link | None = None
    ProtocolFeaturesSupported: dict[str, Any] | None = None


class CollectionDoc(_Doc):
    Members: list[dict[str, Any]]


class BootDoc(_Doc):
    BootSourceOverrideEnabled: str | None = None
    BootSourceOverrideTarget: str | None = None
    BootSourceOverrideMode: str | None = None


class SystemDoc(_Doc):
    Id: str
    Manufacturer: str | None = None
    Model: str | None = None
    SerialNumber: str | None = None
    SKU: str | None = None
    UUID: str | None = None
    BiosVersion: str | None = None
    PowerState: str
    Boot: BootDoc | None = None
    Processors: Link | None = None
    Memory: Link | None = None
    EthernetInterfaces: Link | None = None
    Bios: Link | None = None
    VirtualMedia: Link | None = None
    Links: dict[str, Any] | None = None
    Actions: dict[str, Any] | None = None


class ProcessorMemorySummary(_Doc):
    TotalMemorySizeMiB: int | None = None
    ECCModeEnabled: bool | None = None


class ProcessorDoc(_Doc):
    Id: str
    ProcessorType: str | None = None
    Manufacturer: str | None = None
    Model: str | None = None
    SerialNumber: str | None = None
    UUID: str | None = None
    TotalCores: int | None = None
    MemorySummary: ProcessorMemorySummary | None = None
    ProcessorMemory: list[dict[str, Any]] | None = None
    Status: StatusDoc | None = None


class MemoryDoc(_Doc):
    Id: str
    CapacityMiB: int | None = None
    ErrorCorrection: str | None = None
    Status: StatusDoc | None = None


class EthernetInterfaceDoc(_Doc):
    Id: str
    MACAddress: str
    PermanentMACAddress: str | None = None
    SpeedMbps: int | None = None
    LinkStatus: str | None = None
    InterfaceEnabled: bool | None = None

    @field_validator("MACAddress", mode="before")
    @classmethod
    def _mac(cls, v: Any) -> str:
        return normalise_mac(v)


class PortEthernet(_Doc):
    AssociatedMACAddresses: list[str] | None = None


class PortDoc(_Doc):
    Id: str
    LinkStatus: str | None = None
    CurrentSpeedGbps: float | None = None
    Ethernet: PortEthernet | None = None
    AssociatedNetworkAddresses: list[str] | None = None  # older NetworkPort schema


class NetworkAdapterDoc(_Doc):
    Id: str
    Manufacturer: str | None = None
    Model: str | None = None
    Ports: Link | None = None
    NetworkPorts: Link | None = None  # deprecated, still served by older BMCs


class ChassisDoc(_Doc):
    Id: str
    PCIeDevices: Link | None = None
    NetworkAdapters: Link | None = None


class PCIeDeviceDoc(_Doc):
    Id: str
    Name: str | None = None
    Manufacturer: str | None = None
    Model: str | None = None
    SerialNumber: str | None = None
    Status: StatusDoc | None = None


class SoftwareDoc(_Doc):
    Id: str
    Name: str | None = None
    Version: str | None = None


class ManagerDoc(_Doc):
    Id: str
    FirmwareVersion: str | None = None
    EthernetInterfaces: Link | None = None
    VirtualMedia: Link | None = None


class BiosDoc(_Doc):
    Attributes: dict[str, Any]
    settings: dict[str, Any] | None = Field(default=None, alias="@Redfish.Settings")


class VirtualMediaDoc(_Doc):
    Id: str
    MediaTypes: list[str] | None = None
    Image: str | None = None
    Inserted: bool | None = None
    Actions: dict[str, Any] | None = None


# --- what bringup works with ------------------------------------------------------------
class SystemInfo(BaseModel):
    id: str
    manufacturer: str | None = None
    model: str | None = None
    serial: str | None = None
    sku: str | None = None
    uuid: str | None = None
    bios_version: str | None = None
    power_state: str


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


class Nic(BaseModel):
    id: str
    mac: str
    link: str | None = None
    speed_mbps: int | None = None
    owner: str = "system"          # system | manager | adapter
    uri: str = ""


class Inventory(BaseModel):
    """Everything discovery reads from one BMC."""

    address: str
    system: SystemInfo
    cpus: list[Cpu] = Field(default_factory=list)
    memory: list[Dimm] = Field(default_factory=list)
    gpus: list[Gpu] = Field(default_factory=list)
    nics: list[Nic] = Field(default_factory=list)
    firmware: list[tuple[str, str]] = Field(default_factory=list)
    bios: dict[str, Any] = Field(default_factory=dict)
    #: resources the BMC links to but answered 404 for (that part of the inventory is unknown)
    unavailable: list[str] = Field(default_factory=list)

    @property
    def memory_mib(self) -> int:
        return sum(d.capacity_mib or 0 for d in self.memory)

    def nic_by_mac(self) -> dict[str, Nic]:
        return {n.mac: n for n in self.nics}


class BiosResult(BaseModel):
    """Outcome of :meth:`Bmc.apply_bios`: what did not take after the reset."""

    wanted: dict[str, Any]
    observed: dict[str, Any]
    not_applied: dict[str, tuple[Any, Any]] = Field(default_factory=dict)
    rebooted: bool = False

    @property
    def ok(self) -> bool:
        return not self.not_applied
