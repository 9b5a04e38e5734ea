"""Expected hardware (NetBox device + SKU config context) vs what the BMC reports.

Pure: :func:`verify` takes an :class:`ExpectedNode` and an :class:`~bringup.redfish.Inventory`
and returns findings; it does no I/O. A finding's severity says what it means for the node:
``critical`` blocks it (quarantine), ``hold`` stops it where it is without blaming it (what
the check needs could not be read: the GPUs of a BMC that lists them nowhere bringup reads),
``warning`` needs a look but does not block, ``info`` is a report.

GPU identity is the BMC's resource, never the serial: GPUs that report one serial (two
GPUs of one board, or placeholder serials) are counted each, and the shared serial is a
``gpu_serial_identical`` warning naming them.

NIC identity is the MAC address. BMC resource Ids of interfaces are vendor-specific
(``NIC.Slot.3-1-1``, ``1``...), so they never decide the verdict. A swap (NetBox's cx1
MAC on the port where cx2 belongs) is found by MAC and the physical position the BMC
reports for each port (slot, port), compared with NetBox's order cx0..cxN: critical.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bringup.redfish.models import Inventory, normalise_mac
from bringup.sku import SkuSpec

Severity = Literal["critical", "hold", "warning", "info"]
#: reported GPU memory may differ slightly from the SKU figure (reserved/ECC pages)
GPU_MEMORY_TOLERANCE = 0.02
COMPUTE_IFACE = re.compile(r"^cx(\d+)$")


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
    unreadable = inv.gpus_unreadable
    if unreadable is not None and want.count > 0:
        # not "0 of 8": nobody knows how many there are; the node waits, its hardware unblamed
        return [Finding(severity="hold", code="gpus_unreadable",
                        message=f"{unreadable.reason}; the SKU {sku.sku} has {want.count}: the GPU count "
                                "cannot be checked until the BMC's GPU resources are known to bringup",
                        evidence={"expected": want.count, "unavailable": unreadable.model_dump()})]
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
    shared = inv.identical_serials()
    if shared:
        placeholders = sorted({g.serial or "" for g in inv.gpus if g.serial_placeholder and g.serial in shared})
        what = (f"placeholder serial(s) {', '.join(repr(p) for p in placeholders)}" if placeholders
                else "a board's serial")
        out.append(Finding(severity="warning", code="gpu_serial_identical",
                           message=f"{sum(len(v) for v in shared.values())} GPUs share {len(shared)} serial(s) "
                                   f"({what}): each is counted as its own resource; the serial does not tell "
                                   "them apart",
                           evidence={"serials": shared, "placeholders": placeholders,
                                     "gpus": {g.id: g.uri for g in inv.gpus if g.serial in shared}}))
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
    return out + _swap_findings(expected, inv)


def _compute_ifaces(expected: ExpectedNode) -> list[str]:
    """NetBox's compute interfaces in their order (cx0, cx1, ... cx10): the physical order."""
    names = [i for i in expected.macs if COMPUTE_IFACE.match(i)]
    return sorted(names, key=lambda i: int(COMPUTE_IFACE.match(i).group(1)))  # type: ignore[union-attr]


def _swap_findings(expected: ExpectedNode, inv: Inventory) -> list[Finding]:
    """MACs on the wrong physical ports, by MAC and position, whatever the BMC calls its ports.

    NetBox's cxN is the N-th compute port in slot order; the BMC says where each port sits
    (``Nic.position``). Every compute MAC must be on the port of its own rank."""
    ifaces = _compute_ifaces(expected)
    if not ifaces:
        return []
    macs = {expected.macs[i] for i in ifaces}
    nics = [n for n in inv.nics if n.mac in macs]
    if len(nics) != len(ifaces):
        return []      # a missing NIC is already critical; ranks would shift and blame the wrong ports
    if any(n.position is None for n in nics):
        return [Finding(severity="warning", code="nic_order_unknown",
                        message="the BMC does not say where the compute ports sit (slot, port): MACs swapped "
                                "between ports cannot be detected here",
                        evidence={"ports_without_position": sorted(n.id for n in nics if n.position is None)})]
    by_rank = sorted(nics, key=lambda n: n.position)  # type: ignore[arg-type, return-value]
    out: list[Finding] = []
    for iface, nic in zip(ifaces, by_rank, strict=True):
        if nic.mac == expected.macs[iface]:
            continue
        holder = expected_iface(expected, nic.mac)
        out.append(Finding(severity="critical", code="nic_swapped",
                           message=f"the port where NetBox's {iface} belongs (slot {nic.position[0]}, port "
                                   f"{nic.position[1]}, BMC id {nic.id}) carries {holder}'s MAC {nic.mac}: "
                                   f"cables or NetBox records of {iface} and {holder} are swapped",
                           evidence={"interface": iface, "expected_mac": expected.macs[iface], "found_mac": nic.mac,
                                     "mac_belongs_to": holder, "position": list(nic.position), "bmc_port": nic.id}))
    return out


def expected_iface(expected: ExpectedNode, mac: str) -> str:
    return next((i for i, m in expected.macs.items() if m == mac), "?")


def _unavailable_findings(inv: Inventory) -> list[Finding]:
    # an FC port is no gap; unreadable GPUs are the GPU check's own finding
    gaps = [u for u in inv.unavailable if u.kind not in ("not_ethernet", "gpus_unreadable")]
    if not gaps:
        return []
    return [Finding(severity="warning", code="inventory_incomplete",
                    message=f"{len(gaps)} resource(s) the BMC lists could not be read or understood; "
                            "that part of the hardware is unknown",
                    evidence={"unavailable": [u.model_dump() for u in gaps]})]


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
    findings += _unavailable_findings(inv)
    findings.append(Finding(severity="info", code="firmware", message="firmware versions",
                            evidence={"versions": dict(inv.firmware), "bios_version": inv.system.bios_version}))
    return findings
