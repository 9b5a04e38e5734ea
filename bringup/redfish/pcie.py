"""Is this PCIe device a GPU? Decided by its functions' class and vendor data.

A BMC's PCIeDevices list every function it sees, chipset parts included (Dell lists the
Intel C620 SMBus; AMD servers list the SoC's own "MultiFunction" devices, made by
"Advanced Micro Devices" like AMD's GPUs). The maker alone therefore decides nothing:
a device is a GPU when one of its PCIe functions says so (``DeviceClass`` Display
controller / Processing accelerator, or a GPU vendor id where no class is given). A
device from a GPU maker that gives neither is *unclassified*: reported, never counted.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from bringup.redfish.models import PCIeDeviceDoc, PCIeFunctionDoc
from bringup.redfish.quirks import Quirks

Verdict = Literal["gpu", "not_gpu", "unclassified"]


def maybe_gpu(device: PCIeDeviceDoc, quirks: Quirks) -> bool:
    """Worth reading the functions of: made by a GPU maker (cheap filter, not a verdict)."""
    return bool(device.Manufacturer and re.search(quirks.gpu_pcie_manufacturer, device.Manufacturer))


def classify(functions: list[PCIeFunctionDoc], quirks: Quirks) -> Verdict:
    classes = {c.lower() for c in quirks.gpu_device_classes}
    vendors = {v.lower() for v in quirks.gpu_vendor_ids}
    known = False
    for f in functions:
        if f.DeviceClass:
            known = True
            if f.DeviceClass.lower() in classes:
                return "gpu"
        elif f.VendorId:
            known = True
            if f.VendorId.lower() in vendors:
                return "gpu"
    return "not_gpu" if known else "unclassified"


def slot_ordinal(device: PCIeDeviceDoc) -> int | None:
    loc = device.Slot.Location if device.Slot else None
    return loc.PartLocation.LocationOrdinalValue if loc and loc.PartLocation else None


def functions_ref(raw: dict[str, Any]) -> str | dict[str, Any] | None:
    """The device's PCIeFunctions collection as found in its document (maybe inlined)."""
    ref = raw.get("PCIeFunctions")
    return ref if isinstance(ref, (str, dict)) else None
