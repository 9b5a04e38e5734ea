"""What bringup does to a server through its BMC: power, one-time boot, virtual media,
and reading whether the last boot failed.

Functions take the :class:`~bringup.redfish.client.Bmc` they act on. Actions answered
202 are followed to the end (:mod:`bringup.redfish.tasks`). A boot override goes to the
system, or to the system's ``@Redfish.Settings`` object where the BMC takes it there (AMI
MegaRAC answers the system with 400 ``OperationSupportedInFutureStateURI``).
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Any

from bringup.errors import ConfigError, RedfishError, RedfishRequestError, RedfishTimeoutError

from bringup.redfish.models import BootDoc, LogEntryDoc, ManagerDoc, SystemDoc, VirtualMediaDoc, parse
from bringup.redfish.reader import members
from bringup.redfish.tasks import follow
from bringup.redfish.transport import Reply

if TYPE_CHECKING:
    from bringup.redfish.client import Bmc

log = logging.getLogger(__name__)

POWER_TARGET = {"On": "On", "ForceOn": "On", "ForceRestart": "On", "GracefulRestart": "On",
                "PowerCycle": "On", "ForceOff": "Off", "GracefulShutdown": "Off"}
#: BootProgress states at or past the end of POST
POST_DONE = {"SystemHardwareInitializationComplete", "SetupEntered", "OSBootStarted", "OSRunning"}


def action(bmc: Bmc, path: str, body: dict[str, Any], what: str, timeout: float = 120.0) -> Reply:
    reply = bmc.session.request("POST", path, body=body)
    monitor = reply.headers.get("location")
    if reply.status == 202 and monitor:
        follow(bmc.session, monitor, what, timeout)
    return reply


def power(bmc: Bmc, reset_type: str, wait: bool = True, timeout: float = 120.0) -> str:
    """Reset the system (On, ForceOff, GracefulShutdown, ForceRestart...); returns the PowerState."""
    sysdoc = bmc.system()
    if reset_type in {"On", "ForceOn"} and sysdoc.PowerState == "On":
        return "On"
    if not sysdoc.reset_target:
        raise RedfishError(f"{bmc.session.name}: the system has no ComputerSystem.Reset action")
    action(bmc, sysdoc.reset_target, {"ResetType": reset_type}, f"reset {reset_type}", timeout)
    if not wait or reset_type not in POWER_TARGET:
        return bmc.system().PowerState
    return wait_power(bmc, POWER_TARGET[reset_type], timeout, after=reset_type)


def wait_power(bmc: Bmc, want: str, timeout: float, after: str = "") -> str:
    deadline = time.monotonic() + timeout
    while True:
        state = bmc.system().PowerState
        if state == want:
            return state
        if time.monotonic() > deadline:
            raise RedfishTimeoutError(f"{bmc.session.name}: PowerState is {state}, not {want}, "
                                      f"{timeout:g}s after {after or 'the reset'}", hint="check the system's power")
        time.sleep(0.2)


def post_done(sysdoc: SystemDoc) -> bool | None:
    """Whether POST has ended, from BootProgress; None when the BMC does not report it."""
    if sysdoc.BootProgress is None or not sysdoc.BootProgress.LastState:
        return None
    return sysdoc.PowerState == "On" and sysdoc.BootProgress.LastState in POST_DONE


def _settings_uri(sysdoc: SystemDoc) -> str | None:
    so = sysdoc.settings.SettingsObject if sysdoc.settings else None
    return so.odata_id if so else None


def set_boot_once(bmc: Bmc, target: str) -> None:
    """Boot from ``target`` (Cd, Pxe, Hdd...) on the next boot only."""
    raw = bmc.session.get(bmc.system_uri)
    sysdoc = parse(SystemDoc, raw, bmc.system_uri)
    allowed = (raw.get("Boot") or {}).get("BootSourceOverrideTarget@Redfish.AllowableValues")
    if allowed and target not in allowed:
        raise ConfigError(f"{bmc.session.name}: boot target {target!r} is not one of {', '.join(allowed)}")
    boot: dict[str, Any] = {"BootSourceOverrideTarget": target, "BootSourceOverrideEnabled": "Once"}
    if bmc.quirks.boot_override_mode:
        boot["BootSourceOverrideMode"] = bmc.quirks.boot_override_mode
    where = _patch_boot(bmc, sysdoc, boot)
    got = _read_boot(bmc, where)
    enabled_ok = {"Once", "Continuous"} if bmc.quirks.boot_once_may_read_continuous else {"Once"}
    if got is not None and got.BootSourceOverrideEnabled == "Continuous" and "Continuous" in enabled_ok:
        log.warning("%s: boot override to %s reads Continuous (known quirk); clear it after the install",
                    bmc.session.name, target)
    if got is None or got.BootSourceOverrideTarget != target or got.BootSourceOverrideEnabled not in enabled_ok:
        raise RedfishError(f"{bmc.session.name}: boot override to {target} did not stick at {where} "
                           f"(reads {got.BootSourceOverrideTarget if got else None}/"
                           f"{got.BootSourceOverrideEnabled if got else None})")


def _patch_boot(bmc: Bmc, sysdoc: SystemDoc, boot: dict[str, Any]) -> str:
    """PATCH ``boot`` where this BMC takes it; returns the URI it went to."""
    settings = _settings_uri(sysdoc)
    mode = bmc.quirks.boot_override_target
    if mode == "settings" and settings:
        bmc.session.request("PATCH", settings, body={"Boot": boot})
        return settings
    try:
        bmc.session.request("PATCH", bmc.system_uri, body={"Boot": boot})
        return bmc.system_uri
    except RedfishRequestError:
        if mode != "auto" or not settings:
            raise
        log.info("%s: the system refused the boot override; sending it to its settings object %s",
                 bmc.session.name, settings)
    bmc.session.request("PATCH", settings, body={"Boot": boot})
    return settings


def _read_boot(bmc: Bmc, uri: str) -> BootDoc | None:
    doc = bmc.session.get(uri)
    boot = doc.get("Boot")
    return parse(BootDoc, boot, f"{uri} $.Boot") if isinstance(boot, dict) else None


def clear_boot_override(bmc: Bmc) -> None:
    """Boot normally again (for BMCs whose one-time override does not clear itself)."""
    boot: dict[str, Any] = {"BootSourceOverrideEnabled": "Disabled"}
    if bmc.quirks.boot_override_mode:
        boot["BootSourceOverrideMode"] = bmc.quirks.boot_override_mode
    _patch_boot(bmc, bmc.system(), boot)


# --- virtual media ----------------------------------------------------------------------
def all_media(bmc: Bmc) -> list[tuple[str, VirtualMediaDoc]]:
    """Every virtual medium of the system (under the system, else under its managers)."""
    colls: list[str] = []
    sysdoc = bmc.system()
    if sysdoc.VirtualMedia:
        colls.append(sysdoc.VirtualMedia.odata_id)
    elif bmc.session.root and bmc.session.root.Managers:
        for uri, doc in members(bmc.session, bmc.session.root.Managers.odata_id):
            vm = parse(ManagerDoc, doc, uri).VirtualMedia
            if vm:
                colls.append(vm.odata_id)
    return [(uri, parse(VirtualMediaDoc, doc, uri)) for coll in colls for uri, doc in members(bmc.session, coll)]


def _is_cd(media: VirtualMediaDoc) -> bool:
    return bool({"CD", "DVD"} & set(media.MediaTypes or []))


def cd_media(bmc: Bmc) -> tuple[str, VirtualMediaDoc]:
    for uri, media in all_media(bmc):
        if _is_cd(media):
            return uri, media
    raise RedfishError(f"{bmc.session.name} has no virtual CD/DVD drive", hint="check the BMC license/features")


def pick_seed_medium(media: list[tuple[str, VirtualMediaDoc]]) -> tuple[str, VirtualMediaDoc] | None:
    """Where the install seed goes, beside the installer on the first CD: a removable disk
    (USBStick / Floppy: the DMTF mockups' ``Floppy1``, iDRAC's ``RemovableDisk``), else a
    second CD drive. cloud-init finds the ``cidata`` file system on either."""
    cds = [m for m in media if _is_cd(m[1])]
    first_cd = cds[0][0] if cds else None
    removable = [m for m in media if {"USBStick", "Floppy"} & set(m[1].MediaTypes or []) and m[0] != first_cd]
    return (removable or cds[1:] or [None])[0]


def seed_media(bmc: Bmc) -> tuple[str, VirtualMediaDoc]:
    found = pick_seed_medium(all_media(bmc))
    if found is None:
        raise RedfishError(f"{bmc.session.name} has one virtual medium only; the install seed needs a second "
                           "(a virtual USB stick or a second CD)",
                           hint="serve the seed as a ds=nocloud URL on the kernel command line instead, "
                                "or enable the BMC's second virtual medium")
    return found


def _insert(bmc: Bmc, uri: str, media: VirtualMediaDoc, image_url: str, timeout: float) -> None:
    if media.Inserted and media.Image == image_url:
        return
    if media.Inserted:
        _eject(bmc, uri, media)
    target = ((media.Actions or {}).get("#VirtualMedia.InsertMedia") or {}).get("target")
    if not target:
        raise RedfishError(f"{bmc.session.name}: {uri} has no InsertMedia action")
    action(bmc, target, {"Image": image_url, "Inserted": True, "WriteProtected": True}, "insert media", timeout)
    got = parse(VirtualMediaDoc, bmc.session.get(uri), uri)
    if not got.Inserted or got.Image != image_url:
        raise RedfishError(f"{bmc.session.name}: virtual media reads Inserted={got.Inserted} Image={got.Image!r} "
                           f"after inserting {image_url}", hint="check the BMC can reach the image URL")


def _eject(bmc: Bmc, uri: str, media: VirtualMediaDoc) -> None:
    if not media.Inserted:
        return
    target = ((media.Actions or {}).get("#VirtualMedia.EjectMedia") or {}).get("target")
    if not target:
        raise RedfishError(f"{bmc.session.name}: {uri} has no EjectMedia action")
    action(bmc, target, {}, "eject media")


def insert_media(bmc: Bmc, image_url: str, timeout: float = 120.0) -> None:
    _insert(bmc, *cd_media(bmc), image_url, timeout)


def eject_media(bmc: Bmc) -> None:
    _eject(bmc, *cd_media(bmc))


def insert_seed(bmc: Bmc, seed_url: str, timeout: float = 120.0) -> None:
    """Attach the node's NoCloud seed image as its second virtual medium."""
    _insert(bmc, *seed_media(bmc), seed_url, timeout)


def eject_seed(bmc: Bmc) -> None:
    _eject(bmc, *seed_media(bmc))


# --- did the boot fail? -------------------------------------------------------------------
def _log_entries(bmc: Bmc) -> list[tuple[str, LogEntryDoc]]:
    sysdoc = bmc.system()
    if not sysdoc.LogServices:
        return []
    out = []
    for suri, service in members(bmc.session, sysdoc.LogServices.odata_id):
        entries = service.get("Entries")
        if not isinstance(entries, dict) or "@odata.id" not in entries:
            continue
        for euri, doc in members(bmc.session, entries["@odata.id"]):
            out.append((euri, parse(LogEntryDoc, doc, euri)))
    return out


def log_marker(bmc: Bmc) -> set[str]:
    """The system log entries there are now (boot failures are looked for among later ones)."""
    return {uri for uri, _ in _log_entries(bmc)}


def boot_failure(bmc: Bmc, before: set[str]) -> str | None:
    """What the BMC says went wrong with the boot since ``before`` (a :func:`log_marker`), or None.

    A host that reached ``OSRunning`` did not fail; otherwise a new log entry matching the
    ``boot_failure_pattern`` quirk is the BMC telling us the boot failed."""
    sysdoc = bmc.system()
    if sysdoc.BootProgress and sysdoc.BootProgress.LastState == "OSRunning":
        return None
    pattern = re.compile(bmc.quirks.boot_failure_pattern)
    for uri, entry in _log_entries(bmc):
        if uri in before:
            continue
        text = f"{entry.MessageId or ''} {entry.Message or ''}"
        if pattern.search(text):
            state = sysdoc.BootProgress.LastState if sysdoc.BootProgress else None
            return (f"{entry.Message or entry.MessageId} (log entry {uri}"
                    + (f"; BootProgress {state}" if state else "") + ")")
    return None
