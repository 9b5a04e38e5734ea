"""What one simulated server *is*: GPU identities, the MACs its BMC reports, its BIOS.

Derived deterministically from the fleet profile node and its SKU, with the node's
Redfish faults applied, so every process of the lab (and every test) sees the same
hardware for the same profile. Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from bringup.sku import SkuSpec
from lab.fleet import FaultKind, NodeSpec

GPU_VENDOR = "NVIDIA Corporation"
NIC_VENDOR = "Mellanox Technologies"
CPU_COUNT = 2
DIMM_COUNT = 16
DIMM_MIB = 131072


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()


def gpu_serial(node: NodeSpec, index: int) -> str:
    """Board serial of GPU ``index`` (13 digits like NVIDIA's)."""
    return "1654" + str(int.from_bytes(_digest(node.name, "gpu", index)[:6], "big"))[:9].zfill(9)


def board_serial(node: NodeSpec, board: int) -> str:
    """Serial of GPU board ``board`` (a Grace-Blackwell board carries two GPUs)."""
    return "1654" + str(int.from_bytes(_digest(node.name, "gpu-board", board)[:6], "big"))[:9].zfill(9)


def bmc_gpu_serial(node: NodeSpec, index: int, serials: str = "unique", per_board: int = 2,
                   placeholder: str = "0000000000000") -> str:
    """The SerialNumber the BMC reports for GPU ``index``: its own, its board's, or a placeholder."""
    if serials == "board":
        return board_serial(node, index // per_board)
    if serials == "placeholder":
        return placeholder
    return gpu_serial(node, index)


def gpu_uuid(node: NodeSpec, index: int) -> str:
    """GPU UUID without NVML's ``GPU-`` prefix (Redfish's UUID type has none)."""
    return str(uuid.UUID(bytes=_digest(node.name, "gpu-uuid", index)[:16], version=4))


def present_gpus(node: NodeSpec, sku: SkuSpec) -> list[int]:
    """GPU indexes the BMC enumerates (``missing_gpu`` removes one)."""
    missing = {f.gpu for f in node.faults_of(FaultKind.MISSING_GPU) if f.gpu is not None}
    return [i for i in range(sku.gpu.count) if i not in missing]


def gpu_ecc_enabled(node: NodeSpec) -> bool:
    return not node.has_fault(FaultKind.ECC_OFF)


def observed_macs(node: NodeSpec, sku: SkuSpec) -> dict[str, str]:
    """Interface name -> MAC as the BMC reports it, after MAC faults."""
    macs = {iface: node.mac_of(iface) for iface in node.interface_names(sku.nics.compute)}
    for f in node.faults_of(FaultKind.MAC_MISMATCH):
        if f.iface in macs:
            d = _digest(node.name, f.iface, "replaced-board")
            macs[f.iface] = "02:" + ":".join(f"{b:02x}" for b in d[:5])
    for f in node.faults_of(FaultKind.NIC_SWAPPED):
        if f.iface in macs and f.other in macs:
            macs[f.iface], macs[f.other] = macs[f.other], macs[f.iface]
    return macs


def _other_value(value: Any) -> Any:
    """A plausible factory value that differs from ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    flips = {"Enabled": "Disabled", "Disabled": "Enabled", "Uefi": "Legacy",
             "MaxPerformance": "BalancedPerformance", "NPS1": "NPS4"}
    return flips.get(str(value), f"{value}Default")


def initial_bios(node: NodeSpec, sku: SkuSpec) -> dict[str, Any]:
    """BIOS attributes at discovery: the SKU profile, plus vendor extras, plus faults."""
    attrs: dict[str, Any] = {"ProcTurboMode": "Enabled", "ProcHyperthreading": "Enabled",
                             "AdminPhone": "", "SerialConsole": "Com1"}
    attrs.update(sku.bios)
    for f in node.faults_of(FaultKind.BIOS_DRIFT):
        if f.attribute:
            attrs[f.attribute] = f.value if f.value is not None else _other_value(attrs.get(f.attribute))
    # an attribute that will not take must start out wrong, or nobody could notice
    for f in node.faults_of(FaultKind.BIOS_NOT_APPLIED):
        if f.attribute and attrs.get(f.attribute) == sku.bios.get(f.attribute):
            attrs[f.attribute] = _other_value(attrs.get(f.attribute))
    return attrs


def stuck_bios_attributes(node: NodeSpec) -> set[str]:
    return {f.attribute for f in node.faults_of(FaultKind.BIOS_NOT_APPLIED) if f.attribute}


def fc_wwpn(node: NodeSpec) -> str:
    """The WWPN of the ``fc_port`` fault's HBA port (8 bytes, NAA 2 like Emulex's)."""
    d = _digest(node.name, "fc-wwpn")
    return "20:00:" + ":".join(f"{b:02X}" for b in d[:6])


#: NVSwitches on an 8-GPU HGX baseboard (HGX_FW_NVSwitch_0..3 on a DGX H100)
NVSWITCHES = 4


def firmware(node: NodeSpec, sku: SkuSpec) -> dict[str, str]:
    """Firmware inventory Id -> version, after ``firmware_drift`` faults. GPU and NVSwitch
    versions are NVIDIA's dotted hex (tests/fixtures/redfish/nvidia-nvfwupd)."""
    inv = {"BMC": "2.18.4", "BIOS": "1.9.2", "CPLD": "0.7.1"}
    for i in present_gpus(node, sku):
        inv[f"GPU{i}_VBIOS"] = "96.00.99.00.01"
    if sku.gpu.count == 8:
        for i in range(NVSWITCHES):
            inv[f"NVSwitch{i}"] = "96.10.69.00.01"
    for i in range(sku.nics.compute):
        inv[f"NIC{i}"] = "28.42.1000"
    for f in node.faults_of(FaultKind.FIRMWARE_DRIFT):
        if f.attribute in inv and f.value is not None:
            inv[f.attribute] = str(f.value)
    return inv
