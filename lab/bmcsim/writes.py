"""Writes to a simulated BMC: sessions, reset, virtual media, boot override, BIOS
(firmware updates: :mod:`.update`).

How each is answered is the vendor profile's: where a Boot PATCH is taken (the system,
or only its settings object, refusing the system with the vendor's message id), whether
BootSourceOverrideMode may be written, whether an omitted mode reverts, how a BIOS
settings PATCH is answered (204, 200 "SystemResetRequired", 202 + a Dell job), and
whether an action's Location names a task monitor or the Task itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import update
from .common import R
from .state import BOOT_TARGETS, RESET_TYPES

if TYPE_CHECKING:
    from .service import BmcService, Reply

#: mounting an image over the network takes a while on real BMCs
INSERT_MEDIA_SECONDS = 0.3


def _error(status: int, message_id: str, message: str) -> Reply:
    from .service import error
    return error(status, message_id, message)


def _reply(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    from .service import Reply
    return Reply(status, body, headers or {})


def post(svc: BmcService, path: str, body: Any) -> Reply:
    if not isinstance(body, dict):
        return _error(400, "MalformedJSON", "The request body is not a JSON object.")
    st, tree = svc.state, svc.tree
    if path == f"{R}/SessionService/Sessions":
        if not svc.creds_ok(str(body.get("UserName", "")), str(body.get("Password", ""))):
            return _error(401, "NoValidSession", "The user name or password is not valid.")
        sid, token = st.new_session()
        loc = f"{R}/SessionService/Sessions/{sid}"
        return _reply(201, svc.resource(loc), {"X-Auth-Token": token, "Location": loc})
    if path == f"{tree.sys}/Actions/ComputerSystem.Reset":
        rt = body.get("ResetType")
        if rt not in RESET_TYPES:
            return _error(400, "ActionParameterNotSupported", f"ResetType {rt!r} is not one of {RESET_TYPES}.")
        st.reset(rt)
        return _reply(204)
    for medium, attr in ((tree.vm, "media_image"), (tree.seed_vm, "seed_image")):
        if path == f"{medium}/Actions/VirtualMedia.InsertMedia":
            return _insert(svc, attr, body)
        if path == f"{medium}/Actions/VirtualMedia.EjectMedia":
            setattr(st, attr, None)
            return _reply(204)
    if path == update.SIMPLE_UPDATE:
        return update.simple_update(svc, body)
    return _error(404, "ResourceNotFound", f"There is no action at {path}.")


def _insert(svc: BmcService, attr: str, body: dict[str, Any]) -> Reply:
    st, tree = svc.state, svc.tree
    image = body.get("Image")
    if not isinstance(image, str) or not image:
        return _error(400, "ActionParameterMissing", "InsertMedia needs an Image URI.")
    if getattr(st, attr) is not None:
        return _error(409, "ResourceInUse", "Media is already inserted; eject it first.")

    def mount() -> None:
        setattr(st, attr, image)
    task = st.start_task("Insert virtual media", INSERT_MEDIA_SECONDS, mount)
    if svc.profile.task_location == "task":
        return _reply(202, tree.task(task.id), {"Location": f"{R}/TaskService/Tasks/{task.id}"})
    return _reply(202, tree.task(task.id), {"Location": f"{R}/TaskService/TaskMonitors/{task.id}",
                                            "Retry-After": "1"})


def _boot_values(boot: dict[str, Any], target: str, enabled: str) -> tuple[str, str] | None:
    target = boot.get("BootSourceOverrideTarget", target)
    enabled = boot.get("BootSourceOverrideEnabled", enabled)
    if target not in BOOT_TARGETS or enabled not in {"Disabled", "Once", "Continuous"}:
        return None
    return target, enabled


def patch(svc: BmcService, path: str, body: Any) -> Reply:
    if not isinstance(body, dict):
        return _error(400, "MalformedJSON", "The request body is not a JSON object.")
    st, tree, p = svc.state, svc.tree, svc.profile
    boot = body.get("Boot", {})
    if path == tree.sys:
        if "Boot" in body and p.system.boot_override == "settings":
            so = f"{tree.sys}/{p.system.settings_object}"
            return _error(400, p.system.refusal_message_id,
                          f"Support of this Operation for Boot Properties is moved to FutureState URI({so})")
        if "BootSourceOverrideMode" in boot and not p.system.boot_mode_writable:
            return _error(400, "PropertyNotWritable", "The property BootSourceOverrideMode is a read only "
                                                      "property and cannot be assigned a value.")
        values = _boot_values(boot, st.boot_target, st.boot_enabled)
        mode = boot.get("BootSourceOverrideMode", p.system.boot_mode_when_omitted or st.boot_mode)
        if values is None or mode not in {"Legacy", "UEFI"}:
            return _error(400, "PropertyValueNotInList", "Boot override target, enabled or mode is not allowed.")
        with st.lock:
            st.boot_target, st.boot_enabled = values
            if "Boot" in body:
                st.boot_mode = mode
        return _reply(204)
    if p.system.boot_override == "settings" and path == f"{tree.sys}/{p.system.settings_object}":
        values = _boot_values(boot, st.boot_target, st.boot_enabled)
        if values is None:
            return _error(400, "PropertyValueNotInList", "Boot override target or enabled is not allowed.")
        with st.lock:
            st.boot_pending = {"BootSourceOverrideTarget": values[0], "BootSourceOverrideEnabled": values[1]}
        return _reply(204)
    if path == f"{tree.sys}/{p.system.bios_settings}":
        return _patch_bios(svc, body)
    if path == f"{tree.sys}/Bios":
        return _error(405, "PropertyNotWritable", "Bios is read-only; PATCH its @Redfish.Settings object.")
    return _error(405, "OperationNotAllowed", f"PATCH is not allowed on {path}.")


def _patch_bios(svc: BmcService, body: dict[str, Any]) -> Reply:
    st, p = svc.state, svc.profile
    attrs = body.get("Attributes")
    if not isinstance(attrs, dict):
        return _error(400, "PropertyMissing", "PATCH the Settings resource with an Attributes object.")
    unknown = [a for a in attrs if a not in st.bios]
    if unknown:
        return _error(400, "PropertyUnknown", f"Unknown BIOS attributes: {', '.join(unknown)}.")
    job = st.stage_bios(attrs, apply_time="@Redfish.SettingsApplyTime" in body)
    if p.bios.patch_answer == "200-reset-required":
        # iLO answers 200 with an error envelope saying a reset is needed (fixtures/redfish/hpe-ilo)
        return _reply(200, {"error": {"code": "iLO.0.10.ExtendedInfo",
                                      "message": "See @Message.ExtendedInfo for more information.",
                                      "@Message.ExtendedInfo": [{"MessageId": "iLO.2.26.SystemResetRequired"}]}})
    if p.bios.patch_answer == "202-job" and job is not None:
        return _reply(202, None, {"Location": svc.tree.job_uri(job.id)})
    return _reply(204)


def delete(svc: BmcService, path: str) -> Reply:
    prefix = f"{R}/SessionService/Sessions/"
    if path.startswith(prefix):
        with svc.state.lock:
            if svc.state.sessions.pop(path[len(prefix):], None) is not None:
                return _reply(204)
        return _error(404, "ResourceNotFound", f"There is no session at {path}.")
    return _error(405, "OperationNotAllowed", f"DELETE is not allowed on {path}.")
