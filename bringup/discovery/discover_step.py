"""Step ``discover`` (state planned): Redfish inventory of the node's BMC, verified
against what NetBox says the node is. Critical findings make the node unfit.

A BMC that could not be read is not a finding here: the error that stopped the read is
raised again as it is, so its class decides (``bringup.errors``): a busy or silent BMC
is retried, a TLS or settings problem of ours holds the node, a refusal of our
credentials says which file to fix. Only a BMC whose documents are not Redfish (a
``ParseError``) is the node's own critical finding, kept as evidence.

A ``hold`` finding (the GPUs of a BMC that lists them nowhere bringup reads) is neither a
pass nor the node's fault: the step raises :class:`DiscoveryHeld`, and the lifecycle holds
the node in ``planned`` with that reason (unless a critical finding quarantines it anyway)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bringup.context import Context
from bringup.errors import (
    AuthError,
    BringupError,
    ControllerFault,
    ParseError,
    RedfishAuthError,
    RedfishError,
)
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord


class DiscoveryHeld(RedfishError, ControllerFault):
    """The BMC was read, but not what a check needs (its GPUs): the node is held where it
    is with the reason, never quarantined for hardware nobody could see. Ours to resolve
    (a quirk naming where this BMC lists its GPUs), like any controller fault."""


def discover(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    from bringup.discovery.crawl import discover_one
    from bringup.discovery.verify import ExpectedNode

    if not rec.bmc_address:
        return StepResult(node=rec.name, step="discover", ok=False, summary="no BMC address",
                          reasons=["NetBox has no BMC (OOB) IP for this device"])
    macs = rec.macs if rec.macs is not None else ctx.netbox.macs(rec.id)
    expected = ExpectedNode(name=rec.name, sku=rec.sku, macs=macs, bmc_address=rec.bmc_address,
                            serial=rec.serial or None)
    s = ctx.settings
    d = discover_one(expected, ctx.credentials, port=s.bmc_port,
                     ca_bundle=str(s.bmc_ca_bundle) if s.bmc_ca_bundle else None, insecure=s.bmc_insecure)
    failure = d.failure
    if failure is not None and not isinstance(failure, ParseError):
        if isinstance(failure, AuthError):   # ours to fix: say which file
            raise RedfishAuthError(f"{rec.name}: BMC {rec.bmc_address} refused our credentials: {failure}",
                                   hint="fix bmc_credentials_file in the controller's settings") from failure
        if isinstance(failure, BringupError):   # the class says retry, hold or fail the node
            raise failure
        # a bug of ours says nothing about the node's hardware
        raise ControllerFault(f"{rec.name}: discovery failed inside bringup: {d.error}",
                              hint="a bug of the controller: report it with the log; the node is held") from failure
    critical = [f for f in d.findings if f.severity == "critical"]
    held = [f for f in d.findings if f.severity == "hold"]
    if held and not critical:
        raise DiscoveryHeld(f"{rec.name}: " + "; ".join(f"{f.code}: {f.message}" for f in held),
                            hint="name where this BMC lists its GPUs in bringup/redfish/quirks.yaml "
                                 "(gpu_oem_sources), then run again")
    serials = [g.serial for g in d.inventory.gpus] if d.inventory else []
    warnings = [f"{f.code}: {f.message}" for f in d.findings if f.severity == "warning"]
    style = "danger" if critical else ("warning" if warnings else "success")
    evidence = Evidence(kind="discovery", document=d.to_dict(), summary=d.to_markdown(), style=style)
    figures = {"gpus": len(serials), "findings": len(d.findings)}
    if critical:
        return StepResult(node=rec.name, step="discover", ok=False, summary="critical findings",
                          reasons=[f"{f.code}: {f.message}" for f in critical + held], evidence=[evidence],
                          figures=figures)
    return StepResult(node=rec.name, step="discover", ok=True,
                      summary=f"{len(serials)} GPUs, {len(warnings)} warnings", reasons=warnings,
                      fields={"gpu_serials": serials}, evidence=[evidence], figures=figures)
