"""GPUs a vendor lists only in its own resources, and the word that none could be read.

Some BMCs leave the standard places empty: HPE iLO 5 (Gen10, Gen10 Plus) may list no GPU
Processor and an empty PCIeDevices collection, and name its GPUs only in HPE resources
(``Chassis/1/Devices``: HpeServerDevice with DeviceType ``GPU``; ``Systems/1/PCIDevices``:
HpeServerPciDevice with an integer PCI ClassCode and VendorID). Where those live and how a
member is told to be a GPU is data (quirks ``gpu_oem_sources``); this module only follows
it. The sources describe the same cards, so the first that gives GPUs is the answer.

When no place gives a GPU, :func:`note_unreadable` says so in ``unavailable`` (kind
``gpus_unreadable``): whether the server has no GPU or the BMC does not say cannot be told
from here, and an inventory with 0 GPUs and no word would read as "no GPUs".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bringup.redfish.models import OemDeviceDoc
from bringup.redfish.quirks import OemGpuSource, Quirks
from bringup.redfish.reader import Reader, absent, split_ref
from bringup.redfish.views import Gpu

if TYPE_CHECKING:
    from bringup.redfish.bmc import Bmc


def lookup(doc: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted path of a document ("Oem.Hpe.Links.Devices"), or None."""
    value: Any = doc
    for key in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def as_int(value: Any) -> int | None:
    """A PCI code as an integer: iLO gives decimal integers (VendorID 4318), the standard
    schema hex strings ("0x10de"); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        try:
            return int(text, 16) if text.startswith("0x") else int(text)
        except ValueError:
            return None
    return None


def classify(src: OemGpuSource, doc: dict[str, Any], quirks: Quirks) -> tuple[str, str | None]:
    """("gpu" | "not_gpu" | "unclassified" | "invalid", the JSON path at fault)."""
    if src.type_field:
        value = doc.get(src.type_field)
        if isinstance(value, str):
            return ("gpu" if value.strip().lower() in {t.lower() for t in src.types} else "not_gpu"), None
        if value is not None:
            return "invalid", f"$.{src.type_field}"
    if src.class_field:
        raw = doc.get(src.class_field)
        code = as_int(raw)
        if code is None:
            return ("unclassified", None) if raw is None else ("invalid", f"$.{src.class_field}")
        if code not in src.classes:
            return "not_gpu", None
        if not src.vendor_field:
            return "gpu", None
        raw_vendor = doc.get(src.vendor_field)
        vendor = as_int(raw_vendor)
        if vendor is None:
            return ("unclassified", None) if raw_vendor is None else ("invalid", f"$.{src.vendor_field}")
        makers = {as_int(v) for v in quirks.gpu_vendor_ids}
        return ("gpu" if vendor in makers else "not_gpu"), None
    return "unclassified", None


def _gpu(bmc: Bmc, rd: Reader, src: OemGpuSource, uri: str, doc: dict[str, Any]) -> Gpu | None:
    d = None if absent(doc) else rd.parse(OemDeviceDoc, doc, uri)
    if d is None:
        return None
    verdict, path = classify(src, doc, bmc.quirks)
    if verdict == "invalid":
        rd.inv.note(uri, "invalid", f"{path} is {doc.get(path[2:]) if path else None!r}, not a device type or "
                                    "PCI code", path=path)
        return None
    if verdict == "unclassified":
        rd.inv.note(uri, "unclassified", f"device {d.Name or d.Id} gives no {src.type_field or src.class_field} "
                                         "to tell whether it is a GPU; not counted as one")
        return None
    if verdict != "gpu":
        return None
    location = doc.get(src.location_field) if src.location_field else None
    return Gpu(id=location if isinstance(location, str) and location.strip() else d.Id,
               model=d.Model or d.Name, manufacturer=d.Manufacturer, serial=d.SerialNumber,
               serial_placeholder=bmc.quirks.placeholder_serial(d.SerialNumber),
               health=d.Status.Health if d.Status else None, source=src.link, uri=uri)


def read_gpus(bmc: Bmc, rd: Reader, chassis: list[tuple[str, dict[str, Any]]],
              systems: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """GPUs from the first vendor source that gives any; returns the collections looked at."""
    looked: list[str] = []
    for src in bmc.quirks.gpu_oem_sources:
        for _owner, raw in chassis if src.where == "chassis" else systems:
            ref = lookup(raw, src.link)
            if not isinstance(ref, (str, dict)):
                continue
            looked.append(split_ref(ref)[0])
            for uri, doc in rd.members(ref):
                gpu = _gpu(bmc, rd, src, uri, doc)
                if gpu is not None and not rd.inv.knows_gpu(gpu):
                    rd.inv.gpus.append(gpu)
        if rd.inv.gpus:
            break
    return looked


def note_unreadable(rd: Reader, where: str, looked: list[str], quirks: Quirks) -> None:
    """Say in ``unavailable`` that no GPU could be read, and where it was looked for."""
    places = ["no system lists a GPU Processor", "no chassis a GPU PCIe device"]
    places += [f"{uri} lists none" for uri in looked]
    hint = "" if quirks.gpu_oem_sources else (
        "; no vendor resource is known for this BMC (quirks gpu_oem_sources in bringup/redfish/quirks.yaml)")
    rd.inv.note(where, "gpus_unreadable", "GPUs could not be read from this BMC: " + ", ".join(places) + hint)
