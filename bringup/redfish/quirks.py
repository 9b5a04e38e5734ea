"""Vendor quirks of Redfish services, loaded from ``quirks.yaml`` next to this module.

Quirks are data, not code paths: the client asks ``quirks.boot_override_mode`` and never
``if vendor == ...``. See the YAML for every key, the reason and the public source.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from bringup.errors import ConfigError
from bringup.yamlio import load_file, validation_error

QUIRKS_FILE = Path(__file__).with_name("quirks.yaml")


class OemGpuSource(BaseModel):
    """A vendor resource that lists GPUs where the standard ones do not (HPE iLO 5's
    ``Chassis/1/Devices``, ``Systems/1/PCIDevices``). A member is a GPU when its
    ``type_field`` is one of ``types``, or its ``class_field`` one of ``classes`` (PCI base
    class codes) and, where ``vendor_field`` is given, its vendor is a GPU maker's
    (``gpu_vendor_ids``)."""

    model_config = ConfigDict(extra="forbid")
    #: where the link is: the Chassis documents or the ComputerSystem documents
    where: Literal["chassis", "system"]
    #: dotted path of the link in that document ("Oem.Hpe.Links.Devices")
    link: str
    type_field: str | None = None
    types: list[str] = []
    class_field: str | None = None
    classes: list[int] = []
    vendor_field: str | None = None
    #: the member's location, for the GPU's id where it has no better one
    location_field: str | None = None


class Quirks(BaseModel):
    model_config = ConfigDict(extra="forbid")

    boot_override_mode: str | None = None
    expand: bool = True
    bios_apply_time: bool = True
    boot_once_may_read_continuous: bool = False
    gpu_pcie_manufacturer: str = r"(?i)nvidia"
    gpu_processor_types: list[str] = ["GPU"]
    gpu_device_classes: list[str] = ["DisplayController", "ProcessingAccelerators"]
    gpu_vendor_ids: list[str] = ["0x10de", "0x1002"]
    gpu_oem_sources: list[OemGpuSource] = []
    gpu_serial_placeholder: str = r"(?i)^\s*(0+|n/?a|none|null|unknown|not (available|specified)|to be filled by o\.e\.m\.)?\s*$"
    nic_slot_from_id: str | None = None
    boot_override_target: Literal["auto", "system", "settings"] = "auto"
    bios_max_resets: int = 2
    bios_post_seconds: float = 600.0
    boot_failure_pattern: str = r"(?i)no bootable|boot(ing)? fail|failed to boot"
    firmware_update: Literal["auto", "simple", "multipart"] = "auto"
    firmware_reset_pattern: str = r"(?i)AwaitToActivate|ResetRequired|ActivateRequired|RebootRequired"
    firmware_task_seconds: float = 1800.0
    #: names of the vendor entries that applied (for logs and reports)
    applied: list[str] = []

    def placeholder_serial(self, serial: str | None) -> bool:
        """Whether a reported serial is a placeholder rather than a board's serial."""
        return serial is not None and re.search(self.gpu_serial_placeholder, serial) is not None


class VendorMatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    manufacturer: str | None = None
    model: str | None = None


class VendorQuirk(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    match: VendorMatch
    set: dict[str, Any]
    why: str
    source: str

    def fits(self, manufacturer: str | None, model: str | None) -> bool:
        for pattern, value in ((self.match.manufacturer, manufacturer), (self.match.model, model)):
            if pattern is not None and not re.search(pattern, value or ""):
                return False
        return self.match.manufacturer is not None or self.match.model is not None


class QuirkBook(BaseModel):
    model_config = ConfigDict(extra="forbid")
    defaults: dict[str, Any]
    vendors: list[VendorQuirk] = []


def load_book(path: Path = QUIRKS_FILE) -> QuirkBook:
    doc = load_file(path)
    try:
        book = QuirkBook.model_validate(doc.data or {})
        Quirks.model_validate(book.defaults)
        for v in book.vendors:
            Quirks.model_validate({**book.defaults, **v.set})
    except ValidationError as exc:
        raise validation_error(exc, doc, "Redfish quirks file") from None
    return book


_BOOK: QuirkBook | None = None


def quirks_for(manufacturer: str | None, model: str | None,
               overrides: dict[str, Any] | None = None, book: QuirkBook | None = None) -> Quirks:
    """The quirks that apply to a system of this make and model."""
    global _BOOK
    if book is None:
        if _BOOK is None:
            _BOOK = load_book()
        book = _BOOK
    values: dict[str, Any] = dict(book.defaults)
    applied = []
    for entry in book.vendors:
        if entry.fits(manufacturer, model):
            values.update(entry.set)
            applied.append(entry.name)
    if overrides:
        unknown = set(overrides) - (set(Quirks.model_fields) - {"applied"})
        if unknown:
            raise ConfigError(f"unknown Redfish quirk(s): {', '.join(sorted(unknown))}",
                              hint=f"known quirks are listed in {QUIRKS_FILE}")
        values.update(overrides)
        applied.append("overrides")
    return Quirks(**values, applied=applied)
