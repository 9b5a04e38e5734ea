"""The Manager (the BMC itself): its virtual media, and its own network interfaces for the
inventory.

Virtual media hang under the system on some BMCs and under its managers on most; both
are looked at. The installer goes in the first CD/DVD drive; the node's install seed in
a removable disk or a second CD beside it (:func:`pick_seed_medium`). Inserts and ejects
are actions, followed to their end where answered 202 (:func:`bringup.redfish.task.action`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bringup.errors import RedfishError
from bringup.redfish.models import ManagerDoc, VirtualMediaDoc, parse
from bringup.redfish.reader import Reader, members
from bringup.redfish.system import read_interfaces
from bringup.redfish.task import action

if TYPE_CHECKING:
    from bringup.redfish.bmc import Bmc


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
    action(bmc.session, target, {"Image": image_url, "Inserted": True, "WriteProtected": True}, "insert media",
           timeout)
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
    action(bmc.session, target, {}, "eject media")


def insert_media(bmc: Bmc, image_url: str, timeout: float = 120.0) -> None:
    _insert(bmc, *cd_media(bmc), image_url, timeout)


def eject_media(bmc: Bmc) -> None:
    _eject(bmc, *cd_media(bmc))


def insert_seed(bmc: Bmc, seed_url: str, timeout: float = 120.0) -> None:
    """Attach the node's NoCloud seed image as its second virtual medium."""
    _insert(bmc, *seed_media(bmc), seed_url, timeout)


def eject_seed(bmc: Bmc) -> None:
    _eject(bmc, *seed_media(bmc))


# --- inventory ---------------------------------------------------------------------------
def read_nics(rd: Reader, managers_uri: str) -> None:
    """The managers' own Ethernet interfaces (the BMC's port), owner ``manager``."""
    for uri, doc in rd.members(managers_uri, levels=3):
        mgr = rd.parse(ManagerDoc, doc, uri)
        if mgr is not None and mgr.EthernetInterfaces:
            read_interfaces(rd, doc["EthernetInterfaces"], "manager")
