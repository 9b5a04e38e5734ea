"""Steps of state discovered: ``bios`` (profile applied and read back) and ``configure``
(driver, CUDA and NCCL pinned and verified with Ansible). ``install`` is in
:mod:`bringup.provision.install_step`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any

from bringup.context import Context
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord


def dump(obj: Any) -> Any:
    """A result object as plain JSON-able data."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    return obj


def manifest_of(rec: NodeRecord):
    from bringup.provision.image import load_manifest
    return load_manifest(rec.sku.image)


def bios(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    """Apply the SKU's BIOS profile and prove every attribute took after the reset."""
    from bringup.provision.redfish_steps import apply_bios_profile

    with ctx.bmc(rec.bmc_address, timeout=30.0) as bmc:
        result = apply_bios_profile(bmc, rec.sku.bios)
    doc = {"profile": rec.sku.bios_profile, "wanted": rec.sku.bios, "result": dump(result)}
    if not result.ok:
        reasons = [f"BIOS {attr} did not take: wanted {want!r}, BIOS reads {got!r}"
                   for attr, (want, got) in sorted(result.not_applied.items())]
        return StepResult(node=rec.name, step="bios", ok=False, summary="BIOS profile did not take",
                          reasons=reasons, evidence=[Evidence(kind="bios", document=doc, style="danger",
                                                              summary="BIOS profile did not take")])
    return StepResult(node=rec.name, step="bios", ok=True,
                      summary=f"BIOS profile {rec.sku.bios_profile} applied and read back",
                      fields={"bios_profile": rec.sku.bios_profile},
                      evidence=[Evidence(kind="bios", document=doc, style="success",
                                         summary=f"BIOS profile {rec.sku.bios_profile} applied and read back")])


def configure(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    """Pin and verify driver / CUDA / NCCL exactly as the manifest says; configure the node."""
    from bringup.provision.ansible_steps import configure as run_configure

    manifest = manifest_of(rec)
    step = run_configure(ctx.host(rec), manifest, ctx.ssh_access())[rec.name]
    p = manifest.packages
    doc = {"image": manifest.name, "ok": step.ok, "reason": step.reason, "facts": step.facts}
    if not step.ok:
        return StepResult(node=rec.name, step="configure", ok=False, summary="configuration failed",
                          reasons=[step.reason or "configuration failed"],
                          evidence=[Evidence(kind="configure", document=doc, style="danger",
                                             summary="Configuration failed")])
    summary = f"driver {p.driver}, CUDA {p.cuda}, NCCL {p.nccl} pinned and verified"
    return StepResult(node=rec.name, step="configure", ok=True, summary=summary, figures={"driver": p.driver},
                      fields={"image_id": manifest.name, "driver_version": p.driver, "cuda_version": p.cuda,
                              "nccl_version": p.nccl},
                      evidence=[Evidence(kind="configure", document=doc, style="success",
                                         summary=f"Provisioned with {manifest.name}: {summary}")])
