"""Redfish: the BMC adapter (the only code that speaks Redfish) and its typed models.

    from bringup.redfish import Bmc, Credentials, connect, Inventory, BiosResult
    with connect("10.0.0.5", Credentials("admin", pw), ca_bundle="ca.pem") as bmc:
        inv = bmc.inventory()
"""

from bringup.redfish.bmc import Bmc, Credentials, connect
from bringup.redfish.credentials import load_credentials
from bringup.redfish.quirks import Quirks, quirks_for
from bringup.redfish.views import BiosResult, Cpu, Dimm, Gpu, Inventory, Nic, SystemInfo, Unavailable

__all__ = [
           "BiosResult",
           "Bmc",
           "Cpu",
           "Credentials",
           "Dimm",
           "Gpu",
           "Inventory",
           "Nic",
           "Quirks",
           "SystemInfo",
           "Unavailable",
           "connect",
           "load_credentials",
           "quirks_for",
]
