"""Expected hardware (NetBox device + SKU config context) vs what the BMC reports.

Pure: :func:`verify` takes an :class:`ExpectedNode` and an :class:`~bringup.redfish.Inventory`
and returns findings; it does no I/O. A finding's severity says what it means for the node:
``critical`` blocks it, ``warning`` needs a look but does not block, ``info`` is a report.

NIC identity is the MAC address. BMC resource Ids of interfaces are vendor-specific
(``NIC.Slot.3-1-1``, ``1``...), so they never decide the verdict; when they happen to
equal NetBox's interface names they only add hints (a swap between two ports).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .redfish.models import Inventory, normalise_mac
from .sku import SkuSpec

Severity = Literal["critical", "warning", "info"]
#: reported GPU memory may differ slightly from the SKU figure (reserved/ECC pages)
GPU_MEMORY_TOLERANCE = 0.02


class Finding(BaseModel):
    severity: Severity
    code: str
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)


class ExpectedNode(BaseModel):
    """What NetBox says a node is."""

    model_config = ConfigDict(extra="forbid")

    name: str
    sku: SkuSpec
    macs: dict[str, str] = Field(default_factory=dict)   # interface name -> MAC
    bmc_address: str
    bmc_port: int | None = None                           # None: the caller's default port
    serial: str | None = None

    @field_validator("macs")
    @classmethod
    def _macs(cls, v: dict[str, str]) -> dict[str, str]:
        return {iface: normalise_mac(mac) for iface, mac in v.items()}


def _gpu_findings(sku: SkuSpec, inv: Inventory) -> list[Finding]:
    out: list[Finding] = []
    want = sku.gpu
    if len(inv.gpus) != want.count:
        out.append(Finding(severity="critical", code="gpu_count",
                           message=f"BMC reports {len(inv.gpus)} GPUs, the SKU {sku.sku} has {want.count}",
                           evidence={"expected": want.count, "observed": len(inv.gpus),
                                     "present": [g.id for g in inv.gpus]}))
    wrong_model = [g for g in inv.gpus if (g.model or "").strip().lower() != want.model.strip().lower()]
    if wrong_model:
        out.append(Finding(severity="critical", code="gpu_model",
                           message=f"{len(wrong_model)} GPU(s) are not {want.model}",
                           evidence={"expected": want.model, "observed": {g.id: g.model for g in wrong_model}}))
    unknown_mem = [g.id for g in inv.gpus if g.memory_mib is None]
    wrong_mem = {g.id: g.memory_mib for g in inv.gpus if g.memory_mib is not None
                 and abs(g.memory_mib - want.memory_mib) > want.memory_mib * GPU_MEMORY_TOLERANCE}
    if wrong_mem:
        out.append(Finding(severity="critical", code="gpu_memory",
                           message=f"{len(wrong_mem)} GPU(s) report memory other than {want.memory_mib} MiB",
                           evidence={"expected_mib": want.memory_mib, "observed_mib": wrong_mem}))
    if unknown_mem:
        out.append(Finding(severity="info", code="gpu_memory_not_exposed",
                           message="the BMC does not report GPU memory; burn-in checks it",
                           evidence={"gpus": unknown_mem}))
    if want.ecc == "enabled":
        ecc_off = [g.id for g in inv.gpus if g.ecc_enabled is False]
        if ecc_off:
            out.append(Finding(severity="critical", code="gpu_ecc_disabled",
                               message=f"ECC is disabled on {len(ecc_off)} GPU(s); the SKU requires it",
                               evidence={"gpus": ecc_off}))
    unhealthy = {g.id: g.health for g in inv.gpus if g.health not in (None, "OK")}
    if unhealthy:
        out.append(Finding(severity="warning", code="gpu_health",
                           message=f"the BMC reports {len(unhealthy)} GPU(s) not OK", evidence={"health": unhealthy}))
    return out


def _nic_findings(expected: ExpectedNode, inv: Inventory) -> list[Finding]:
    out: list[Finding] = []
    observed = inv.nic_by_mac()
    expected_by_mac = {mac: iface for iface, mac in expected.macs.items()}
    by_id = {n.id: n for n in inv.nics}
    for iface, mac in expected.macs.items():
        if mac in observed:
            nic = observed[mac]
            # a hint only: the BMC names this MAC's port like another of our interfaces
            other = nic.id if nic.id in expected.macs and nic.id != iface else None
            if other is not None:
                out.append(Finding(severity="warning", code="nic_swapped",
                                   message=f"{iface}'s MAC {mac} is on the port the BMC calls {other}; "
                                           f"the NetBox records of {iface} and {other} look swapped",
                                   evidence={"interface": iface, "mac": mac, "bmc_port": other,
                                             "bmc_port_expected_mac": expected.macs[other]}))
            continue
        same_name = by_id.get(iface)
        evidence: dict[str, Any] = {"interface": iface, "expected_mac": mac}
        msg = f"{iface}: MAC {mac} is not reported by the BMC"
        if same_name is not None and same_name.mac not in expected_by_mac:
            evidence["bmc_port_same_name_mac"] = same_name.mac
            msg += f" (a port named {iface} reports {same_name.mac}: replaced NIC or wrong NetBox record?)"
        out.append(Finding(severity="critical", code="nic_missing", message=msg, evidence=evidence))
    extra = [n for n in inv.nics if n.mac not in expected_by_mac]
    if extra:
        out.append(Finding(severity="warning", code="nic_extra",
                           message=f"the BMC reports {len(extra)} MAC(s) NetBox does not know",
                           evidence={"macs": {n.id: n.mac for n in extra}}))
    return out


def _bios_findings(sku: SkuSpec, inv: Inventory, severity: Severity) -> list[Finding]:
    if not inv.bios:
        return [Finding(severity="warning", code="bios_not_exposed",
                        message="the BMC exposes no BIOS attributes; the BIOS profile cannot be checked")]
    drift = {k: {"expected": v, "observed": inv.bios.get(k)} for k, v in sku.bios.items() if inv.bios.get(k) != v}
    if not drift:
        return []
    return [Finding(severity=severity, code="bios_drift",
                    message=f"{len(drift)} BIOS attribute(s) differ from profile {sku.bios_profile}: "
                            + ", ".join(sorted(drift)),
                    evidence={"profile": sku.bios_profile, "attributes": drift})]


def verify(expected: ExpectedNode, inv: Inventory, *, bios_drift_severity: Severity = "warning") -> list[Finding]:
    """Compare one node's inventory with its expectation.

    ``bios_drift_severity`` is ``warning`` at discovery (provisioning applies the profile)
    and should be ``critical`` once the profile has been applied.
    """
    findings: list[Finding] = []
    if expected.serial and inv.system.serial != expected.serial:
        findings.append(Finding(severity="critical", code="serial_mismatch",
                                message=f"BMC {expected.bmc_address} reports serial {inv.system.serial}, "
                                        f"NetBox expects {expected.serial}: another server answers at this address",
                                evidence={"expected": expected.serial, "observed": inv.system.serial}))
    findings += _gpu_findings(expected.sku, inv)
    findings += _nic_findings(expected, inv)
    findings += _bios_findings(expected.sku, inv, bios_drift_severity)
    findings.append(Finding(severity="info", code="firmware", message="firmware versions",
                            evidence={"versions": dict(inv.firmware), "bios_version": inv.system.bios_version}))
    return findings
