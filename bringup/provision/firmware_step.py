"""Step ``firmware`` of state discovered: the SKU's firmware policy, checked and (optionally)
enforced through the BMC before the BIOS profile is applied.

The step reads the BMC's FirmwareInventory and checks it against the SKU's ``firmware``
rules (:mod:`bringup.provision.firmware_policy`). With updates allowed (the run's ``firmware_update``
parameter, else the settings' ``firmware_update``, off by default) every drifting
component whose rule names an ``image`` is updated through the BMC
(:func:`bringup.redfish.update_service.update_firmware`: task followed, host reset where the image
is staged, versions read back), then the inventory is checked again. Critical drift that
remains makes the node unfit, each reason naming the component, the version found and
the version wanted; warnings are kept in the evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bringup.context import Context
from bringup.errors import RedfishError, TransientError
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord
from bringup.provision.firmware_policy import FwFinding, Member, check, reasons, summary


def _members(bmc: Any) -> list[Member]:
    return [Member(id=s.id, name=s.name, version=s.version, uri=s.uri, updateable=s.updateable)
            for s in bmc.firmware()]


def _update_plan(findings: list[FwFinding]) -> dict[str, list[str]]:
    """image -> the member URIs it must go to (one SimpleUpdate per image)."""
    plan: dict[str, list[str]] = {}
    for f in findings:
        if f.updatable and f.image and f.uri not in plan.get(f.image, []):
            plan.setdefault(f.image, []).append(f.uri)
    return plan


def allowed(ctx: Context, params: Mapping[str, Any]) -> bool:
    if "firmware_update" in params:
        return bool(params["firmware_update"])
    return bool(getattr(ctx.settings, "firmware_update", False))


def firmware(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    """Check the firmware policy of the node's SKU; update drifting components if allowed."""
    rules = rec.sku.firmware
    if not rules:
        return StepResult(node=rec.name, step="firmware", ok=True, skipped=True,
                          summary=f"SKU {rec.sku.sku} has no firmware policy")
    update = allowed(ctx, params)
    updates: list[dict[str, Any]] = []
    with ctx.bmc(rec.bmc_address, timeout=30.0) as bmc:
        found = check(_members(bmc), rules)
        first = found
        plan = _update_plan(found) if update else {}
        for image, targets in plan.items():
            try:
                outcome = bmc.update_firmware(image, targets)
                updates.append({"ok": True, **outcome.model_dump(mode="json")})
            except TransientError:
                raise
            except RedfishError as exc:   # the node's firmware would not take: a finding, not a crash
                updates.append({"ok": False, "image": image, "targets": targets, "error": str(exc)})
        if plan:
            found = check(_members(bmc), rules)
    blocking = [f for f in found if f.blocking]
    drift = [f for f in found if not f.passed]
    doc = {"sku": rec.sku.sku, "update_allowed": update, "findings": [f.as_dict() for f in found],
           "before": [f.as_dict() for f in first] if plan else None, "updates": updates,
           "counts": summary(found)}
    fixed = sum(1 for u in updates if u.get("ok"))
    if blocking:
        why = reasons(blocking)
        failed = [f"firmware update with {u['image']} failed: {u['error']}" for u in updates if not u.get("ok")]
        return StepResult(node=rec.name, step="firmware", ok=False, summary="firmware below the SKU's policy",
                          reasons=why + failed,
                          evidence=[Evidence(kind="firmware", document=doc, style="danger",
                                             summary="Firmware below the SKU's policy:\n\n"
                                                     + "\n".join(f"- {r}" for r in why))])
    text = (f"firmware meets the {rec.sku.sku} policy" + (f" after {fixed} update(s)" if fixed else "")
            + (f"; {len(drift)} warning(s)" if drift else ""))
    return StepResult(node=rec.name, step="firmware", ok=True, summary=text,
                      evidence=[Evidence(kind="firmware", document=doc, style="warning" if drift else "success",
                                         summary=text[0].upper() + text[1:])])
