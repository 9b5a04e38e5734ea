"""Steps of state discovered: ``bios`` (profile applied and read back), ``install`` (OS
over virtual media, SSH answers with the pinned host key) and ``configure`` (driver,
CUDA and NCCL pinned and verified with Ansible)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from ..context import Context
from ..errors import BringupError
from ..netbox_adapter import NodeRecord
from ..results import Evidence, StepResult


def dump(obj: Any) -> Any:
    """A result object as plain JSON-able data."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    return obj


def manifest_of(rec: NodeRecord):
    from ..image import load_manifest
    return load_manifest(rec.sku.image)


def bios(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    """Apply the SKU's BIOS profile and prove every attribute took after the reset."""
    from ..provision import apply_bios_profile

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


def install(ctx: Context, rec: NodeRecord, params: Mapping[str, Any], ssh_timeout: float | None = None) -> StepResult:
    """Install the SKU's image over virtual media and wait for SSH with the pinned host key.

    Re-installing wipes a node, so it is never repeated blindly: if NetBox records this
    image as installed and the node answers SSH with the expected host key, the install
    is skipped (a rerun after a crash between the install and the next step)."""
    from ..provision import install_os
    from ..ssh import expected_host_key, wait_for_ssh

    manifest = manifest_of(rec)
    if ssh_timeout is None:
        ssh_timeout = float(getattr(ctx.settings, "install_wait_s", 300.0))
    port = ctx.settings.ssh_port
    key = expected_host_key(Path(ctx.settings.ssh_known_hosts), rec.address, port)
    if rec.custom_fields.get("image_id") == manifest.name and _answers(rec, port, key):
        return StepResult(node=rec.name, step="install", ok=True, skipped=True,
                          summary=f"{manifest.name} already on the node; not reinstalled")
    media_url = ctx.settings.media_url.format(name=manifest.name) if ctx.settings.media_url else manifest.iso.url
    started = time.time()
    with ctx.bmc(rec.bmc_address, timeout=30.0) as bmc:
        result = install_os(bmc, manifest, media_url, wait_timeout=ssh_timeout,
                            ssh_wait=lambda seconds: wait_for_ssh(rec.address, port, key, seconds, node=rec.name))
    doc = {"image": manifest.name, "media_url": media_url, "result": dump(result),
           "started": round(started, 3), "finished": round(time.time(), 3)}
    if result.boot_failure is not None:
        reason = f"the BMC reports the boot from {media_url} failed: {result.boot_failure}"
        return StepResult(node=rec.name, step="install", ok=False, summary="boot from the install media failed",
                          reasons=[reason], evidence=[Evidence(kind="install", document=doc, style="danger",
                                                               summary="OS install failed to boot")])
    return StepResult(node=rec.name, step="install", ok=True,
                      summary=f"{manifest.name} installed; SSH answers with the pinned host key",
                      fields={"image_id": manifest.name},
                      evidence=[Evidence(kind="install", document=doc, style="success",
                                         summary=f"OS install of {manifest.name} from {media_url}")])


def _answers(rec: NodeRecord, port: int, key: str) -> bool:
    from ..ssh import wait_for_ssh
    try:
        wait_for_ssh(rec.address, port, key, 3.0, node=rec.name)
    except BringupError:
        return False
    return True


def configure(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    """Pin and verify driver / CUDA / NCCL exactly as the manifest says; configure the node."""
    from ..provision import configure as run_configure

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
