"""The ComputerSystem: which one is the host, its power, its one-time boot, whether POST
is over and whether the boot failed, and what it lists for the inventory (processors,
memory, Ethernet interfaces).

Functions take the :class:`~bringup.redfish.bmc.Bmc` they act on. A boot override goes to
the system, or to the system's ``@Redfish.Settings`` object where the BMC takes it there
(AMI MegaRAC answers the system with 400 ``OperationSupportedInFutureStateURI``). Its
Bios resource is :mod:`.bios`.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from bringup.errors import ConfigError, RedfishError, RedfishRequestError, RedfishTimeoutError
from bringup.redfish.models import (
    BootDoc,
    EthernetInterfaceDoc,
    LogEntryDoc,
    MemoryDoc,
    ProcessorDoc,
    SystemDoc,
    parse,
)
from bringup.redfish.reader import Reader, absent, members
from bringup.redfish.session import now, pause
from bringup.redfish.task import action
from bringup.redfish.views import Cpu, Dimm, Gpu, Nic
from bringup.retry import Backoff, Timeout, poll

if TYPE_CHECKING:
    from bringup.redfish.bmc import Bmc

log = logging.getLogger(__name__)

POWER_TARGET = {"On": "On", "ForceOn": "On", "ForceRestart": "On", "GracefulRestart": "On",
                "PowerCycle": "On", "ForceOff": "Off", "GracefulShutdown": "Off"}
#: BootProgress states at or past the end of POST
POST_DONE = {"SystemHardwareInitializationComplete", "SetupEntered", "OSBootStarted", "OSRunning"}
#: how often a power state and POST are asked while waiting
POWER_POLL = Backoff(first=0.2, factor=1.0, cap=0.2)
POST_POLL = Backoff(first=1.0, factor=1.0, cap=1.0)


def host_system(systems: list[tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, Any]]:
    """The system bringup boots: one with a BIOS and a Reset action, not a GPU baseboard
    (``HGX_Baseboard_0`` is a ComputerSystem too, with neither)."""
    def rank(item: tuple[str, dict[str, Any]]) -> tuple[int, int]:
        doc = item[1]
        resettable = "#ComputerSystem.Reset" in (doc.get("Actions") or {})
        return (0 if "Bios" in doc else 1, 0 if resettable else 1)
    return min(systems, key=rank)


# --- power and POST ----------------------------------------------------------------------
def power(bmc: Bmc, reset_type: str, wait: bool = True, timeout: float = 120.0) -> str:
    """Reset the system (On, ForceOff, GracefulShutdown, ForceRestart...); returns the PowerState."""
    sysdoc = bmc.system()
    if reset_type in {"On", "ForceOn"} and sysdoc.PowerState == "On":
        return "On"
    if not sysdoc.reset_target:
        raise RedfishError(f"{bmc.session.name}: the system has no ComputerSystem.Reset action")
    action(bmc.session, sysdoc.reset_target, {"ResetType": reset_type}, f"reset {reset_type}", timeout)
    if not wait or reset_type not in POWER_TARGET:
        return bmc.system().PowerState
    return wait_power(bmc, POWER_TARGET[reset_type], timeout, after=reset_type)


def wait_power(bmc: Bmc, want: str, timeout: float, after: str = "") -> str:
    try:
        return poll(lambda: bmc.system().PowerState, done=lambda state: state == want, timeout=timeout,
                    what=f"PowerState {want}", backoff=POWER_POLL, sleep=pause, clock=now)
    except Timeout as exc:
        raise RedfishTimeoutError(f"{bmc.session.name}: PowerState is {exc.last}, not {want}, "
                                  f"{timeout:g}s after {after or 'the reset'}", hint="check the system's power") from None


def post_done(sysdoc: SystemDoc) -> bool | None:
    """Whether POST has ended, from BootProgress; None when the BMC does not report it."""
    if sysdoc.BootProgress is None or not sysdoc.BootProgress.LastState:
        return None
    return sysdoc.PowerState == "On" and sysdoc.BootProgress.LastState in POST_DONE


def until_post_done(bmc: Bmc, timeout: float) -> bool:
    """Wait until the host is On and past POST (as far as the BMC tells); False when
    ``timeout`` passed first. Staged BIOS settings and firmware images apply during POST."""
    def over(sysdoc: SystemDoc) -> bool:
        return sysdoc.PowerState == "On" and post_done(sysdoc) is not False
    try:
        poll(bmc.system, done=lambda s: s is not None and over(s), timeout=max(0.0, timeout),
             what="the end of POST", backoff=POST_POLL, sleep=pause, clock=now)
        return True
    except Timeout:
        return False


# --- one-time boot -----------------------------------------------------------------------
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


# --- did the boot fail? (the system's LogServices) --------------------------------------
def _log_entries(bmc: Bmc) -> list[tuple[str, LogEntryDoc]]:
    sysdoc = bmc.system()
    if not sysdoc.LogServices:
        return []
    out = []
    for _suri, service in members(bmc.session, sysdoc.LogServices.odata_id):
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


# --- inventory: what a system lists ------------------------------------------------------
def read_processors(bmc: Bmc, rd: Reader, coll: str | dict[str, Any]) -> None:
    inv = rd.inv
    gpu_types = {t.upper() for t in bmc.quirks.gpu_processor_types}
    for uri, doc in rd.members(coll):
        p = None if absent(doc) else rd.parse(ProcessorDoc, doc, uri)
        if p is None:
            continue
        kind = (p.ProcessorType or "CPU").upper()
        if kind in gpu_types:
            mem = p.MemorySummary.TotalMemorySizeMiB if p.MemorySummary else None
            if mem is None and p.ProcessorMemory:
                mem = sum(int(m.get("CapacityMiB") or 0) for m in p.ProcessorMemory) or None
            gpu = Gpu(id=p.Id, model=p.Model, manufacturer=p.Manufacturer, serial=p.SerialNumber, uuid=p.UUID,
                      serial_placeholder=bmc.quirks.placeholder_serial(p.SerialNumber),
                      memory_mib=mem, ecc_enabled=p.MemorySummary.ECCModeEnabled if p.MemorySummary else None,
                      health=p.Status.Health if p.Status else None, uri=uri)
            if not inv.knows_gpu(gpu):
                inv.gpus.append(gpu)
        elif kind == "CPU":
            inv.cpus.append(Cpu(id=p.Id, model=p.Model, cores=p.TotalCores))


def read_memory(rd: Reader, coll: str | dict[str, Any]) -> None:
    for muri, mdoc in rd.members(coll):
        m = None if absent(mdoc) else rd.parse(MemoryDoc, mdoc, muri)
        if m is not None:
            rd.inv.memory.append(Dimm(id=m.Id, capacity_mib=m.CapacityMiB, ecc=m.ErrorCorrection))


def read_interfaces(rd: Reader, coll: str | dict[str, Any], owner: str) -> None:
    """EthernetInterfaces of a system or a manager; a MAC seen before is not listed twice."""
    inv = rd.inv
    seen = inv.nic_by_mac()
    for uri, doc in rd.members(coll):
        e = None if absent(doc) else rd.parse(EthernetInterfaceDoc, doc, uri)
        if e is None or e.MACAddress in seen:
            continue
        nic = Nic(id=e.Id, mac=e.MACAddress, link=e.LinkStatus, speed_mbps=e.SpeedMbps, owner=owner, uri=uri)
        inv.nics.append(nic)
        seen[nic.mac] = nic
