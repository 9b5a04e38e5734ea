"""Step ``install`` of state discovered: the OS from the stock installer ISO, unattended,
with a host key bringup made for the node.

1. Ask the node what it runs (:func:`bringup.provision.installed.read_installed`, over SSH with the
   key NetBox pins for it). The same image, and the run not forced: nothing to do
   ("already installed, not reinstalled"). A node answering with another key is refused.
2. Otherwise generate a new host key, store its public half in NetBox (``ssh_host_key``)
   and the controller's known_hosts *before* the node boots, render and validate the
   node's NoCloud seed with the private half (:mod:`bringup.provision.install_seed`), build it as a
   ``cidata`` ISO into ``seed_dir``, insert the installer ISO and the seed (second
   medium), boot once from the CD and wait for SSH with the pinned key, watching the BMC.
3. The seed is deleted once the node answered: its private key has no other use.

A forced rerun of an admitted node reaches this step only after :meth:`Lifecycle.start`
drained it (cordon and drain before anything destructive).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bringup.context import Context
from bringup.errors import ConfigError, HostKeyMismatch
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord


def _known_hosts(ctx: Context) -> Path:
    if not ctx.settings.ssh_known_hosts:
        raise ConfigError("settings have no ssh_known_hosts", hint="name the file bringup pins nodes' host keys in")
    return Path(ctx.settings.ssh_known_hosts)


def seed_location(ctx: Context, node: str) -> tuple[Path, str]:
    """Where the node's seed is written and the URL its BMC fetches it from."""
    s = ctx.settings
    if not s.seed_dir or not s.seed_url:
        raise ConfigError("settings have no seed_dir / seed_url: without a seed the installer stops at its "
                          "first question", hint="set seed_dir (a folder a web server serves to the BMCs) and "
                                                 "seed_url (e.g. http://10.0.0.1/seeds/{node}.iso)")
    return Path(s.seed_dir) / f"{node}.iso", s.seed_url.format(node=node)


def on_node(ctx: Context, rec: NodeRecord) -> Any:
    """What the node says it runs (None: no answer, no record, or no pinned key yet)."""
    from bringup.provision.hostkeys import FIELD, pin
    from bringup.provision.installed import read_installed
    pinned = str(rec.custom_fields.get(FIELD) or "")
    if not pinned:
        return None
    # the key NetBox pins is the one known_hosts expects, for the SSH seam and Ansible alike
    pin(_known_hosts(ctx), rec.address, ctx.settings.ssh_port, pinned)
    return read_installed(ctx.ssh(), ctx.target(rec))


def install(ctx: Context, rec: NodeRecord, params: Mapping[str, Any], ssh_timeout: float | None = None) -> StepResult:
    """Install the SKU's image unattended from the installer ISO plus the node's seed."""
    from bringup.provision.configure_steps import manifest_of

    manifest = manifest_of(rec)
    force = bool(params.get("force"))
    try:
        there = on_node(ctx, rec)
    except HostKeyMismatch:
        if not force:
            raise  # someone else answers at the node's address: never install over it blindly
        there = None  # a forced reinstall is how a node gets a new key
    if there is not None and there.image == manifest.name and not force:
        doc = {"image": manifest.name, "on_node": there.model_dump(), "reinstalled": False}
        return StepResult(node=rec.name, step="install", ok=True, skipped=True,
                          summary=f"{manifest.name} already installed (the node says so); not reinstalled",
                          evidence=[Evidence(kind="install", document=doc, style="info",
                                             summary=f"{manifest.name} already on the node; not reinstalled")])
    return _reinstall(ctx, rec, manifest, there, force, ssh_timeout)


def _reinstall(ctx: Context, rec: NodeRecord, manifest: Any, there: Any, force: bool,
               ssh_timeout: float | None) -> StepResult:
    from bringup.provision import hostkeys
    from bringup.provision import install_seed as seed
    from bringup.provision import seed_iso as seediso
    from bringup.provision.configure_steps import dump
    from bringup.provision.redfish_steps import install_os
    from bringup.remote.ssh import wait_for_ssh

    if ssh_timeout is None:
        ssh_timeout = float(getattr(ctx.settings, "install_wait_s", 300.0))
    port = ctx.settings.ssh_port
    iso_path, seed_url = seed_location(ctx, rec.name)
    ssh = ctx.ssh()
    key = hostkeys.generate(f"root@{rec.name}")
    files = seed.render(manifest, hostname=rec.name, host_key=key,
                        authorized_keys=[_public_of_client(ssh.access.key_file)])
    seediso.build(files, iso_path)
    # NetBox and known_hosts learn the new key before the node can present it: a run that
    # dies during the install leaves the next one expecting the key the node will have
    ctx.netbox.update_node(rec.id, fields={hostkeys.FIELD: key.pinned})
    rec.custom_fields[hostkeys.FIELD] = key.pinned
    hostkeys.pin(_known_hosts(ctx), rec.address, port, key.pinned)
    media_url = ctx.settings.media_url.format(name=manifest.name) if ctx.settings.media_url else manifest.iso.url
    started = time.time()
    try:
        with ctx.bmc(rec.bmc_address, timeout=30.0) as bmc:
            result = install_os(bmc, manifest, media_url, seed_url=seed_url, wait_timeout=ssh_timeout,
                                ssh_wait=lambda s: wait_for_ssh(ssh, ctx.target(rec), s))
    finally:
        seediso.remove(iso_path)  # the node has its key (or never will from this seed)
    same = there is not None and there.image == manifest.name
    doc = {"image": manifest.name, "media_url": media_url, "seed_url": seed_url, "forced": force,
           "before": there.model_dump() if there is not None else None, "host_key": key.pinned,
           "seed": {"user-data": seed.redact(files["user-data"]), "meta-data": files["meta-data"]},
           "result": dump(result), "started": round(started, 3), "finished": round(time.time(), 3)}
    if result.boot_failure is not None:
        reason = f"the BMC reports the boot from {media_url} failed: {result.boot_failure}"
        return StepResult(node=rec.name, step="install", ok=False, summary="boot from the install media failed",
                          reasons=[reason], evidence=[Evidence(kind="install", document=doc, style="danger",
                                                               summary="OS install failed to boot")])
    how = f"reinstalled (forced; it already ran {manifest.name})" if same else "installed"
    return StepResult(node=rec.name, step="install", ok=True,
                      summary=f"{manifest.name} {how} from its seed; SSH answers with the pinned host key",
                      fields={"image_id": manifest.name},
                      evidence=[Evidence(kind="install", document=doc, style="success",
                                         summary=f"OS install of {manifest.name} from {media_url} + seed")])


def _public_of_client(key_file: Path) -> str:
    """The controller's public key (``<key>.pub`` beside it), for the seed's authorized keys."""
    pub = Path(str(key_file) + ".pub")
    if not pub.is_file():
        raise ConfigError(f"{pub} is missing; the seed authorizes the controller's public key",
                          hint="keep the public key beside ssh_key_file")
    return " ".join(pub.read_text().split()[:3])
