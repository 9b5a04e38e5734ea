"""The UpdateService: the FirmwareInventory (what runs on each component) and firmware
updates, followed to the version read back.

:func:`update_firmware` hands the BMC an image for some FirmwareInventory members
(``UpdateService.SimpleUpdate`` with ``ImageURI``/``Targets``/``TransferProtocol``: the BMC
pulls the image, DSP0266 "Simple updates"), follows the Task the 202 names to its end
(:mod:`.task`: a monitor answering 202 or the Task answering 200 with its TaskState),
reads the Task's messages, resets the host where the image is staged until the next POST
(DMTF Update registry ``AwaitToActivate``; the ``firmware_reset_pattern`` quirk) or the
members still read their old version, waits for POST to end and reads the members again.
The outcome is a value: the versions before and after, the task's state and messages.

BMCs without the SimpleUpdate action take a multipart push instead (``MultipartHttpPushUri``,
the AMI-based DGX BMC: tests/fixtures/redfish/nvidia-nvfwupd; DSP0266 "Multipart HTTP push
updates"): the controller fetches the image and POSTs the form's two parts,
``UpdateParameters`` (JSON: ``Targets``, ``@Redfish.OperationApplyTime``) and ``UpdateFile``.
The ``firmware_update`` quirk picks the way where a BMC offers both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import requests
from pydantic import BaseModel, Field

from bringup.errors import ConfigError, RedfishError, RedfishTimeoutError
from bringup.redfish import system
from bringup.redfish.models import SoftwareDoc, UpdateServiceDoc, parse
from bringup.redfish.reader import Reader, members
from bringup.redfish.responses import messages
from bringup.redfish.session import now
from bringup.redfish.task import follow, state_of
from bringup.redfish.views import Software

if TYPE_CHECKING:
    from bringup.redfish.bmc import Bmc


class UpdateOutcome(BaseModel):
    """What one update did, for the evidence: versions before and after, per member URI."""

    image: str
    targets: list[str]
    method: str = "simple"
    task: str | None = None
    task_state: str = ""
    message_ids: list[str] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    staged: bool = False
    resets: int = 0
    before: dict[str, str | None] = Field(default_factory=dict)
    after: dict[str, str | None] = Field(default_factory=dict)

    @property
    def changed(self) -> dict[str, str | None]:
        return {u: v for u, v in self.after.items() if v != self.before.get(u)}


def update_service(bmc: Bmc) -> UpdateServiceDoc:
    root = bmc.session.root
    if root is None or root.UpdateService is None:
        raise RedfishError(f"{bmc.session.name} has no UpdateService", hint="update the firmware another way")
    uri = root.UpdateService.odata_id
    return parse(UpdateServiceDoc, bmc.session.get(uri), uri)


def versions(bmc: Bmc, uris: list[str]) -> dict[str, str | None]:
    """Each member's Version as the BMC reads it now."""
    return {uri: parse(SoftwareDoc, bmc.session.get(uri), uri).Version for uri in uris}


def firmware_members(bmc: Bmc) -> list[Software]:
    """The FirmwareInventory alone (cheaper than a whole inventory), every member parsed."""
    svc = update_service(bmc)
    if svc.FirmwareInventory is None:
        return []
    out = []
    for uri, doc in members(bmc.session, svc.FirmwareInventory.odata_id):
        s = parse(SoftwareDoc, doc, uri)
        out.append(Software(id=s.Id, name=s.Name, version=s.Version, uri=uri, updateable=s.Updateable))
    return out


def _method(bmc: Bmc, svc: UpdateServiceDoc) -> str:
    want = bmc.quirks.firmware_update
    if want == "auto":
        return "simple" if svc.simple_update_target else ("multipart" if svc.MultipartHttpPushUri else "none")
    return want


def _protocol(image: str) -> str | None:
    m = re.match(r"(?i)(https?|ftp|sftp|scp|tftp|nfs|cifs)://", image)
    return m.group(1).upper() if m else None


def fetch_image(url: str, timeout: float = 300.0) -> bytes:
    """The image a multipart push uploads, from the firmware repository."""
    try:
        resp = requests.get(url, timeout=timeout)
        resp.raise_for_status()
    except requests.RequestException as exc:
        raise ConfigError(f"cannot fetch the firmware image {url}: {exc}",
                          hint="check the SKU policy's image URL and that the firmware repository answers") from None
    return resp.content


def _push(bmc: Bmc, svc: UpdateServiceDoc, image: str, targets: list[str],
          fetch: Callable[[str], bytes]) -> tuple[int, object, dict[str, str]]:
    data = fetch(image)
    if svc.MaxImageSizeBytes is not None and len(data) > svc.MaxImageSizeBytes:
        raise RedfishError(f"{bmc.session.name}: image {image} is {len(data)} bytes, over the BMC's "
                           f"MaxImageSizeBytes {svc.MaxImageSizeBytes}")
    name = image.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "image.bin"
    params = json.dumps({"Targets": targets, "@Redfish.OperationApplyTime": "Immediate"})
    parts = {"UpdateParameters": (None, params, "application/json"),
             "UpdateFile": (name, data, "application/octet-stream")}
    assert svc.MultipartHttpPushUri is not None  # noqa: S101  (narrows the type: the caller checked it)
    reply = bmc.session.request("POST", svc.MultipartHttpPushUri, body=parts,
                                headers={"Content-Type": "multipart/form-data"})
    return reply.status, reply.doc, reply.headers


def update_firmware(bmc: Bmc, image: str, targets: list[str], *, reset: bool | None = None,
                    timeout: float | None = None, fetch: Callable[[str], bytes] = fetch_image) -> UpdateOutcome:
    """Apply ``image`` to the FirmwareInventory members ``targets`` (URIs) and read them back.

    ``reset``: None resets the host when the task says the image awaits a reset or a target
    still reads its old version; True always; False never (the caller resets later).
    ``fetch`` reads the image for a multipart push (the BMC pulls it itself otherwise)."""
    if not targets:
        raise ConfigError("a firmware update needs at least one target member")
    timeout = bmc.quirks.firmware_task_seconds if timeout is None else timeout
    deadline = now() + timeout
    svc = update_service(bmc)
    method = _method(bmc, svc)
    out = UpdateOutcome(image=image, targets=targets, method=method, before=versions(bmc, targets))
    if method == "multipart" and svc.MultipartHttpPushUri:
        status, doc, headers = _push(bmc, svc, image, targets, fetch)
    elif method == "simple" and svc.simple_update_target:
        body: dict[str, object] = {"ImageURI": image, "Targets": targets}
        proto = _protocol(image)
        if proto:
            body["TransferProtocol"] = proto
        reply = bmc.session.request("POST", svc.simple_update_target, body=body)
        status, doc, headers = reply.status, reply.doc, reply.headers
    else:
        raise RedfishError(f"{bmc.session.name}: the UpdateService offers no {method} update "
                           "(no SimpleUpdate action, no MultipartHttpPushUri)",
                           hint="this BMC cannot be updated through Redfish; check the firmware_update quirk")
    out.messages = messages(doc)
    task_uri = doc.get("@odata.id") if isinstance(doc, dict) and "TaskState" in doc else _task_in_messages(doc)
    location = headers.get("location") or task_uri
    if status == 202 and location:
        follow(bmc.session, location, "firmware update", max(1.0, deadline - now()))
    task_uri = task_uri or location
    if task_uri:
        _read_task(bmc, task_uri, out)
    pattern = re.compile(bmc.quirks.firmware_reset_pattern)
    out.staged = any(pattern.search(m) for m in out.message_ids)
    out.after = versions(bmc, targets)
    unchanged = any(out.after[u] == out.before[u] for u in targets)
    if reset or (reset is None and (out.staged or unchanged)):
        sysdoc = bmc.system()
        system.power(bmc, "ForceRestart" if sysdoc.PowerState == "On" else "On", wait=True,
                     timeout=max(1.0, deadline - now()))
        out.resets += 1
        # staged images activate during POST: read the members once it is over
        if not system.until_post_done(bmc, deadline - now()):
            raise RedfishTimeoutError(f"{bmc.session.name}: the host did not finish POST after the firmware "
                                      "update", hint="check the system's console through its BMC")
        out.after = versions(bmc, targets)
    return out


def _task_in_messages(doc: object) -> str | None:
    """The Task a 202 names only in a ``Task.1.0.New`` message, without a Location or a Task
    body (the AMI-based DGX BMC's push answer: tests/fixtures/redfish/nvidia-nvfwupd)."""
    for m in (doc.get("Messages") if isinstance(doc, dict) else None) or []:
        mid = str(m.get("MessageId") or "") if isinstance(m, dict) else ""
        args = m.get("MessageArgs") or [] if isinstance(m, dict) else []
        if mid.startswith("Task.") and mid.endswith(".New") and args and str(args[0]).startswith("/redfish/"):
            return str(args[0])
    return None


def _read_task(bmc: Bmc, uri: str, out: UpdateOutcome) -> None:
    """The task's final state and its messages (a monitor answers 204 once over: read the Task)."""
    reply = bmc.session.call("GET", uri)
    if reply.status >= 400 or not isinstance(reply.doc, dict):
        return
    state, msgs = state_of(reply.doc, uri)
    out.task = reply.doc.get("@odata.id") or uri
    out.task_state = state or out.task_state
    out.messages = msgs or out.messages
    out.message_ids = [str(m.get("MessageId") or "") for m in reply.doc.get("Messages") or [] if isinstance(m, dict)]
    if state and state.lower() in {"exception", "killed", "cancelled"}:
        raise RedfishError(f"{bmc.session.name}: firmware update of {', '.join(out.targets)} ended in {state}: "
                           + ("; ".join(out.messages) or "no message"), hint=f"see {uri} on the BMC")



def read_firmware(rd: Reader, uri: str) -> None:
    """The FirmwareInventory for the inventory: ``firmware`` (name, version) and ``software``."""
    upd = rd.get(uri, levels=2) or {}
    fw = upd.get("FirmwareInventory")
    if not (isinstance(fw, dict) and "@odata.id" in fw):
        return
    for muri, doc in rd.members(fw):
        s = rd.parse(SoftwareDoc, doc, muri)
        if s is not None:
            rd.inv.firmware.append((s.Name or s.Id, s.Version or ""))
            rd.inv.software.append(Software(id=s.Id, name=s.Name, version=s.Version, uri=muri,
                                            updateable=s.Updateable))
