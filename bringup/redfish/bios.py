"""Applying BIOS attributes the way BMCs really take them: staged, applied at POST.

A PATCH to the Bios ``@Redfish.Settings`` object only stages values; they apply during
a later POST, after the reset (Dell: by a configuration job that the PATCH creates when
it carries ``@Redfish.SettingsApplyTime``, run by the Lifecycle Controller, which then
reboots the host once more; HPE iLO: "SystemResetRequired", applied at the next POST).
:func:`apply_bios` stages, resets, waits (bounded) until the job is over or POST has
ended and nothing we staged is pending any more, resets once more if the BMC still holds
them after a POST, and only then reads back. What did not take is a result value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from bringup.errors import ConfigError, RedfishError, RedfishTimeoutError
from bringup.redfish import system
from bringup.redfish.models import BiosDoc, parse
from bringup.redfish.responses import messages
from bringup.redfish.session import now, pause
from bringup.redfish.task import JOB_FAILED, TASK_FAILED, settled, state_of
from bringup.redfish.views import BiosResult
from bringup.retry import Timeout, poll

if TYPE_CHECKING:
    from bringup.redfish.bmc import Bmc

Wait = Literal["applied", "pending", "failed"]


def _bios(bmc: Bmc, uri: str) -> BiosDoc:
    return parse(BiosDoc, bmc.session.get(uri), uri)


def _pending(bmc: Bmc, bios_uri: str, settings_uri: str, staged: dict[str, Any]) -> dict[str, Any]:
    """Staged values the BMC still holds without having applied them."""
    current = _bios(bmc, bios_uri).Attributes
    if settings_uri == bios_uri:
        return {k: v for k, v in staged.items() if current.get(k) != v}
    future = _bios(bmc, settings_uri).Attributes
    # Dell and the lab empty the settings object once applied; HPE keeps every attribute in
    # it (the "future" BIOS): pending is what it holds that the current BIOS does not have
    return {k: v for k, v in staged.items() if future.get(k) == v and current.get(k) != v}


def apply_bios(bmc: Bmc, wanted: dict[str, Any], reboot: bool = True, timeout: float = 300.0) -> BiosResult:
    """Stage ``wanted``, reset, wait for the BMC to apply it, read back what took."""
    deadline = now() + timeout
    sysdoc = bmc.system()
    if not sysdoc.Bios:
        raise RedfishError(f"{bmc.session.name}: the system exposes no Bios resource")
    bios_uri = sysdoc.Bios.odata_id
    bios = _bios(bmc, bios_uri)
    unknown = sorted(set(wanted) - set(bios.Attributes))
    if unknown:
        raise ConfigError(f"{bmc.session.name}: BIOS has no attribute(s) {', '.join(unknown)}",
                          hint="fix the SKU's bios profile to use this BIOS's attribute names")
    diff = {k: v for k, v in wanted.items() if bios.Attributes.get(k) != v}
    if not diff:
        return BiosResult(wanted=wanted, observed=bios.Attributes)
    so = bios.settings.SettingsObject if bios.settings else None
    settings_uri = so.odata_id if so else bios_uri
    body: dict[str, Any] = {"Attributes": diff}
    times = bios.settings.SupportedApplyTimes if bios.settings else None
    if bmc.quirks.bios_apply_time and (times is None or "OnReset" in times):
        body["@Redfish.SettingsApplyTime"] = {"ApplyTime": "OnReset"}
    reply = bmc.session.request("PATCH", settings_uri, body=body)
    result = BiosResult(wanted=wanted, observed=bios.Attributes, messages=messages(reply.doc))
    location = reply.headers.get("location")
    job = location if location and location.rstrip("/") != settings_uri.rstrip("/") else None
    result.job = job
    if not reboot:
        result.pending = _pending(bmc, bios_uri, settings_uri, diff)
        return result
    outcome: Wait = "pending"
    while outcome == "pending" and result.resets < max(1, bmc.quirks.bios_max_resets):
        remaining = max(1.0, deadline - now())
        system.power(bmc, "ForceRestart" if bmc.system().PowerState == "On" else "On", wait=True,
                      timeout=remaining)
        result.resets += 1
        result.rebooted = True
        outcome = _wait_applied(bmc, bios_uri, settings_uri, diff, job, deadline, result)
    _wait_booted(bmc, deadline)
    result.observed = _bios(bmc, bios_uri).Attributes
    result.pending = _pending(bmc, bios_uri, settings_uri, diff)
    result.not_applied = {k: (v, result.observed.get(k)) for k, v in wanted.items() if result.observed.get(k) != v}
    return result


def _wait_applied(bmc: Bmc, bios_uri: str, settings_uri: str, staged: dict[str, Any], job: str | None,
                  deadline: float, result: BiosResult) -> Wait:
    """Wait after a reset until the BMC has applied what we staged, or says it will not
    without another reset ("pending" once POST is over and the values are still held)."""
    started = now()

    def ask() -> Wait | None:
        if job:
            reply = bmc.session.call("GET", job)
            state, msgs = state_of(reply.doc, job) if reply.status < 400 else (None, [])
            if state is not None:   # the job decides while it says anything
                result.job_state = state
                result.messages = msgs or result.messages
                if not settled(state):
                    return None
                return "failed" if state.lower() in JOB_FAILED | TASK_FAILED else "applied"
        sysdoc = bmc.system()
        if sysdoc.PowerState != "On":
            return None
        done = system.post_done(sysdoc)
        pending = _pending(bmc, bios_uri, settings_uri, staged)
        if not pending and done is not False:
            return "applied"
        if done is None:   # no BootProgress: give POST the time the quirks allow
            done = now() - started > bmc.quirks.bios_post_seconds
        return "pending" if pending and done else None

    try:
        return poll(ask, timeout=max(0.0, deadline - now()), what="the BIOS settings applied",
                    backoff=system.POST_POLL, sleep=pause, clock=now)
    except Timeout:
        return "pending"


def _wait_booted(bmc: Bmc, deadline: float) -> None:
    """After the settings applied the host may reset once more (Dell's Lifecycle
    Controller does): wait until it is On and past POST again, bounded."""
    if not system.until_post_done(bmc, deadline - now()) and bmc.system().PowerState != "On":
        raise RedfishTimeoutError(f"{bmc.session.name}: the host is not back On after applying BIOS settings",
                                  hint="check the system's console through its BMC")
