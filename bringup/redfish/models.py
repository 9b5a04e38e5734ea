"""Typed views of the Redfish documents bringup reads.

``parse(model, doc, uri)`` validates one JSON document; a missing or malformed field
raises :class:`bringup.errors.ParseError` naming the resource URI and the JSON path
(``/redfish/v1/Systems/1/EthernetInterfaces/cx0 $.MACAddress``). Only fields bringup
relies on are required; everything vendors commonly omit is optional. What bringup
builds from them (the inventory) lives in :mod:`bringup.redfish.views` and is re-exported
here.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bringup.errors import ParseError
from bringup.redfish.views import BiosResult, Cpu, Dimm, Gpu, Inventory, Nic, SystemInfo, Unavailable

__all__ = ["BiosResult", "Cpu", "Dimm", "Gpu", "Inventory", "Nic", "SystemInfo", "Unavailable"]

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


class PartLocationDoc(_Doc):
    ServiceLabel: str | None = None
    LocationOrdinalValue: int | None = None
    LocationType: str | None = None


class LocationDoc(_Doc):
    PartLocation: PartLocationDoc | None = None


class SettingsDoc(_Doc):
    """The ``@Redfish.Settings`` annotation: where staged values go and when they last applied."""

    SettingsObject: Link | None = None
    Time: str | None = None
    ETag: str | None = None
    Messages: list[dict[str, Any]] | None = None
    SupportedApplyTimes: list[str] | None = None


# --- documents as the BMC sends them ------------------------------------------------------
class RootLinksDoc(_Doc):
    Sessions: Link | None = None


class ServiceRootDoc(_Doc):
    RedfishVersion: str | None = None
    Links: RootLinksDoc | None = None
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


class BootProgressDoc(_Doc):
    LastState: str | None = None
    OemLastState: str | None = None


class ComputerSystemDoc(_Doc):
    """Any ComputerSystem; an HGX baseboard or a partition may lack what a host has."""

    Id: str
    SystemType: str | None = None
    Manufacturer: str | None = None
    Model: str | None = None
    SerialNumber: str | None = None
    SKU: str | None = None
    UUID: str | None = None
    BiosVersion: str | None = None
    PowerState: str | None = None
    Status: StatusDoc | None = None
    Boot: BootDoc | None = None
    BootProgress: BootProgressDoc | None = None
    Processors: Link | None = None
    Memory: Link | None = None
    EthernetInterfaces: Link | None = None
    Bios: Link | None = None
    VirtualMedia: Link | None = None
    LogServices: Link | None = None
    Links: dict[str, Any] | None = None
    Actions: dict[str, Any] | None = None
    settings: SettingsDoc | None = Field(default=None, alias="@Redfish.Settings")

    @property
    def reset_target(self) -> str | None:
        return ((self.Actions or {}).get("#ComputerSystem.Reset") or {}).get("target")


class SystemDoc(ComputerSystemDoc):
    """The host system bringup powers, boots and configures: it must say its PowerState."""

    PowerState: str


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
    Status: StatusDoc | None = None

    @field_validator("MACAddress", mode="before")
    @classmethod
    def _mac(cls, v: Any) -> str:
        return normalise_mac(v)


class PortEthernet(_Doc):
    AssociatedMACAddresses: list[str] | None = None


class PortDoc(_Doc):
    """A ``Port`` (NetworkAdapter v1.5+) or the deprecated ``NetworkPort`` Dell still serves."""

    Id: str
    PortId: str | None = None
    PhysicalPortNumber: str | None = None           # NetworkPort
    PortProtocol: str | None = None                 # Port: Ethernet, FC, InfiniBand...
    ActiveLinkTechnology: str | None = None         # NetworkPort: Ethernet, FibreChannel...
    LinkNetworkTechnology: str | None = None
    LinkStatus: str | None = None
    CurrentSpeedGbps: float | None = None
    Ethernet: PortEthernet | None = None
    AssociatedNetworkAddresses: list[str | None] | None = None
    Location: LocationDoc | None = None


class NetworkAdapterDoc(_Doc):
    Id: str
    Manufacturer: str | None = None
    Model: str | None = None
    Ports: Link | None = None
    NetworkPorts: Link | None = None  # deprecated, still served by older BMCs
    Location: LocationDoc | None = None


class ChassisDoc(_Doc):
    Id: str
    ChassisType: str | None = None
    PCIeDevices: Link | None = None
    NetworkAdapters: Link | None = None


class PCIeSlotDoc(_Doc):
    Location: LocationDoc | None = None


class PCIeDeviceDoc(_Doc):
    Id: str
    Name: str | None = None
    Manufacturer: str | None = None
    Model: str | None = None
    SerialNumber: str | None = None
    UUID: str | None = None
    DeviceType: str | None = None
    PCIeFunctions: Link | None = None
    Slot: PCIeSlotDoc | None = None
    Status: StatusDoc | None = None


class OemDeviceDoc(_Doc):
    """A member of a vendor's own device list (HPE's HpeServerDevice, HpeServerPciDevice):
    the fields every such list shares; the fields that classify it are named by the quirk
    (:class:`~bringup.redfish.quirks.OemGpuSource`) and read from the document."""

    Id: str
    Name: str | None = None
    Manufacturer: str | None = None
    Model: str | None = None
    SerialNumber: str | None = None
    Status: StatusDoc | None = None


class PCIeFunctionDoc(_Doc):
    Id: str
    DeviceClass: str | None = None
    ClassCode: str | None = None
    VendorId: str | None = None
    DeviceId: str | None = None


class SoftwareDoc(_Doc):
    Id: str
    Name: str | None = None
    Version: str | None = None
    Updateable: bool | None = None


class UpdateServiceDoc(_Doc):
    """``/redfish/v1/UpdateService``: the SimpleUpdate action and/or a multipart push URI."""

    Id: str | None = None
    FirmwareInventory: Link | None = None
    MultipartHttpPushUri: str | None = None
    MaxImageSizeBytes: int | None = None
    Actions: dict[str, Any] | None = None

    @property
    def simple_update_target(self) -> str | None:
        act = (self.Actions or {}).get("#UpdateService.SimpleUpdate")
        return act.get("target") if isinstance(act, dict) else None


class ManagerDoc(_Doc):
    Id: str
    FirmwareVersion: str | None = None
    EthernetInterfaces: Link | None = None
    VirtualMedia: Link | None = None


class BiosDoc(_Doc):
    Attributes: dict[str, Any]
    settings: SettingsDoc | None = Field(default=None, alias="@Redfish.Settings")


class VirtualMediaDoc(_Doc):
    Id: str
    MediaTypes: list[str] | None = None
    Image: str | None = None
    Inserted: bool | None = None
    Actions: dict[str, Any] | None = None


class TaskDoc(_Doc):
    """A Redfish ``Task``, or a Dell ``DellJob`` (``JobState``): whichever the BMC answers."""

    Id: str | None = None
    TaskState: str | None = None
    TaskStatus: str | None = None
    JobState: str | None = None
    Message: str | None = None
    Messages: list[dict[str, Any]] | None = None
    PercentComplete: int | None = None


class LogEntryDoc(_Doc):
    Id: str
    Severity: str | None = None
    Message: str | None = None
    MessageId: str | None = None
    Created: str | None = None
