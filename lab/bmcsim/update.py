"""Firmware updates on a simulated BMC: ``UpdateService.SimpleUpdate`` (the BMC pulls the
image) or, where the profile says so, a multipart push to ``MultipartHttpPushUri`` (the
image is in the request, named by its part's file name), and the update's Task.

The action answers 202 with the Task and a Location (monitor or Task, as the profile's
``task_location`` says, like every action here). The Task reads New, then Running, then
Completed over ``update.task_delay`` power delays; at its end each target's new image is
in place, or, for members matching the profile's ``update.staged`` (host BIOS, GPU and
NVSwitch firmware), staged: the task says so with the DMTF Update registry's
``AwaitToActivate`` and FirmwareInventory shows the new version only after the next POST.

The lab has no firmware packages: the version an image carries is read from its file
name, ``<anything>-<version>.<ext>`` (``gpu-vbios-96.00.99.00.01.fwpkg``); an image whose
name carries none fails its task (``Update.1.0.VerificationFailed``), as a package a BMC
cannot verify does.
"""

from __future__ import annotations

import json
import re
from email.parser import BytesParser
from email.policy import HTTP
from typing import TYPE_CHECKING, Any

from .common import R

if TYPE_CHECKING:
    from .service import BmcService, Reply

SIMPLE_UPDATE = f"{R}/UpdateService/Actions/UpdateService.SimpleUpdate"
PUSH_URI = f"{R}/UpdateService/upload"
FIRMWARE = f"{R}/UpdateService/FirmwareInventory/"
PROTOCOLS = {"HTTP", "HTTPS"}
_VERSION_IN_NAME = re.compile(r"[-_]v?([0-9A-Za-z]+(?:\.[0-9A-Za-z]+)+)\.(?:fwpkg|bin|pldm|img|exe|rom|tar|zip)$")


def _message(mid: str, text: str, args: list[str], severity: str = "OK", resolution: str = "None.") -> dict[str, Any]:
    return {"@odata.type": "#Message.v1_2_0.Message", "MessageId": mid, "Message": text, "MessageArgs": args,
            "MessageSeverity": severity, "Resolution": resolution}


def image_version(uri: str) -> str | None:
    """The version an image's file name carries, or None."""
    m = _VERSION_IN_NAME.search(uri.split("?", 1)[0])
    return m.group(1) if m else None


def multipart_push(svc: BmcService, headers: dict[str, str], raw: bytes) -> Reply:
    """POST to ``MultipartHttpPushUri``: parts ``UpdateParameters`` (JSON) and ``UpdateFile``."""
    from .service import error
    if not svc.profile.update.multipart_push:
        return error(405, "OperationNotAllowed", f"POST is not allowed on {PUSH_URI}.")
    ctype = headers.get("content-type", "")
    if not ctype.lower().startswith("multipart/form-data"):
        return error(415, "UnsupportedMediaType", "Send a multipart/form-data body.")
    msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
    params, filename, data = None, None, None
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name == "UpdateParameters":
            try:
                params = json.loads(part.get_payload(decode=True) or b"{}")
            except ValueError:
                return error(400, "MalformedJSON", "UpdateParameters is not JSON.")
        elif name == "UpdateFile":
            filename, data = part.get_filename(), part.get_payload(decode=True)
    if not isinstance(params, dict) or not filename or not data:
        return error(400, "ActionParameterMissing", "The form needs UpdateParameters and an UpdateFile.")
    return _start(svc, filename, params.get("Targets"))


def simple_update(svc: BmcService, body: dict[str, Any]) -> Reply:
    from .service import error
    up = svc.profile.update
    if not up.simple_update:
        return error(404, "ResourceNotFound", f"There is no action at {SIMPLE_UPDATE}.")
    image = body.get("ImageURI")
    if not isinstance(image, str) or not image:
        return error(400, "ActionParameterMissing", "SimpleUpdate needs an ImageURI.")
    proto = body.get("TransferProtocol")
    if proto is not None and proto not in PROTOCOLS:
        return error(400, "ActionParameterNotSupported", f"TransferProtocol {proto!r} is not one of {sorted(PROTOCOLS)}.")
    if proto is None and not re.match(r"(?i)https?://", image):
        return error(400, "ActionParameterMissing", "ImageURI has no scheme; give a TransferProtocol.")
    return _start(svc, image, body.get("Targets"))


def _start(svc: BmcService, image: str, targets: Any) -> Reply:
    """Check the targets, start the update's task, answer 202 with it."""
    from .service import Reply, error
    st, up = svc.state, svc.profile.update
    if not isinstance(targets, list) or not targets:
        return error(400, "ActionParameterMissing", "SimpleUpdate needs Targets (FirmwareInventory members).")
    ids = []
    for t in targets:
        key = str(t).rstrip("/").removeprefix(FIRMWARE)
        if key not in st.firmware:
            return error(400, "ActionParameterValueNotInList", f"Target {t} is not a firmware inventory member.")
        ids.append(key)
    version = image_version(image)
    staged = re.compile(up.staged)

    def apply() -> None:
        if version is None:
            task.failure = f"image {image} did not verify"
            task.messages = [_message("Update.1.0.VerificationFailed", f"Verification of image '{image}' failed.",
                                      [image], "Critical", "Use a signed package built for this server.")]
            return
        for key in ids:
            if staged.search(key):
                st.firmware_staged[key] = version
                task.messages.append(_message(
                    "Update.1.0.AwaitToActivate",
                    f"Awaiting for an action to proceed with activating image '{version}' on '{key}'.",
                    [version, key], resolution="Reset the system to activate the image."))
            else:
                st.firmware[key] = version
                task.messages.append(_message("Update.1.0.UpdateSuccessful",
                                              f"Device '{key}' successfully updated with image '{version}'.",
                                              [key, version]))

    duration = up.task_delay * st.power_delay
    task = st.start_task(f"Firmware update of {', '.join(ids)}", duration, apply)
    task.new_until = task.started + duration / 3   # queued first, then transferring and applying
    if svc.profile.task_location == "task":
        return Reply(202, svc.tree.task(task.id), {"Location": f"{R}/TaskService/Tasks/{task.id}"})
    return Reply(202, svc.tree.task(task.id), {"Location": f"{R}/TaskService/TaskMonitors/{task.id}",
                                               "Retry-After": "1"})
