"""The mutable state of one simulated BMC and the timeline of the server behind it.

Time is a clock read lazily (no timer per BMC): a reset powers on after ``power_delay``
seconds, then POST runs for the profile's ``post_delay`` (x ``power_delay``) while
``BootProgress`` moves on. What real servers do during POST happens when POST ends
(:meth:`BmcState.tick`, called on every request and by the simulator's ticker):
staged BIOS settings apply (after the profile's number of POSTs, or by a Dell-style
configuration job that then resets the host once more), a one-time boot override is
consumed, and a boot from virtual media starts the OS install, whose failure the BMC
shows (BootProgress stays at the end of POST, a log entry says why).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bringup.sku import SkuSpec
from lab.fleet import Fault, FaultKind, NodeSpec

from . import hardware
from .profile import VendorProfile, load_profile

log = logging.getLogger("lab.bmcsim")

ON_RESETS = {"On", "ForceOn", "ForceRestart", "GracefulRestart", "PowerCycle", "Nmi"}
OFF_RESETS = {"ForceOff", "GracefulShutdown", "PushPowerButton"}
RESET_TYPES = sorted(ON_RESETS | OFF_RESETS - {"Nmi"})
BOOT_TARGETS = ["None", "Pxe", "Cd", "Usb", "Hdd", "BiosSetup", "UefiShell"]


@dataclass
class Task:
    id: str
    name: str
    started: float
    done_at: float
    on_done: Callable[[], None] | None = None
    finished: bool = False
    #: Redfish messages of the task (an update's UpdateSuccessful / AwaitToActivate)
    messages: list[dict[str, Any]] = field(default_factory=list)
    #: why it failed: the task ends in TaskState Exception
    failure: str | None = None
    #: until when it reads TaskState New (queued, not started: an update's first polls)
    new_until: float = 0.0


@dataclass
class Job:
    """A Dell-style configuration job: Scheduled until a POST runs it."""

    id: str
    name: str
    attributes: dict[str, Any]
    state: str = "Scheduled"
    message: str = "Task successfully scheduled."
    done_at: float = 0.0


@dataclass
class BmcState:
    node: NodeSpec
    sku: SkuSpec
    profile: VendorProfile = field(default_factory=load_profile)
    power_delay: float = 1.0
    clock: Callable[[], float] = time.monotonic
    #: called as installer(image_url, seed_url, current) when the OS "installs" from virtual
    #: media (seed_url: the image in the second medium, or None; current(): no reset since
    #: this boot, so an install a reset cut short leaves nothing behind); raises if the image
    #: does not boot; returns {"installed": False} when the node hangs after it or at the installer
    installer: Callable[[str, str | None, Callable[[], bool]], Any] | None = None
    #: called when a reset is about to boot the installer: the running OS goes down at once
    #: (its sshd must not answer the wait for the new one)
    os_down: Callable[[], Any] | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    power_on: bool = True
    transition_until: float = 0.0
    post_until: float = 0.0
    booting: bool = False          # a POST whose end has not been processed yet
    boot_target: str = "None"
    boot_enabled: str = "Disabled"
    boot_mode: str = "UEFI"
    #: Boot properties PATCHed to the system's settings object, applied at the next boot
    boot_pending: dict[str, Any] = field(default_factory=dict)
    #: images the system tried to boot in Legacy mode (the install images are UEFI-only)
    legacy_boots: list[str] = field(default_factory=list)
    media_image: str | None = None
    #: the image in the second virtual medium (a removable disk: the install seed)
    seed_image: str | None = None
    bios: dict[str, Any] = field(default_factory=dict)
    bios_pending: dict[str, Any] = field(default_factory=dict)
    posts_since_staged: int = 0
    jobs: dict[str, Job] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)   # id -> token
    tasks: dict[str, Task] = field(default_factory=dict)
    installs: list[str] = field(default_factory=list)
    #: boots started so far: an install belongs to the boot that started it
    boots: int = 0
    #: one installer at a time, as one machine runs one: an install that a reset
    #: superseded ends before the next begins (two at once left a node without sshd)
    install_lock: threading.Lock = field(default_factory=threading.Lock)
    #: "none" | "installing" | "running" | "hung" | "failed": what the OS boot came to
    os_state: str = "none"
    log_entries: list[dict[str, Any]] = field(default_factory=list)
    #: FirmwareInventory Id -> the version running; staged images wait for the next POST
    firmware: dict[str, str] = field(default_factory=dict)
    firmware_staged: dict[str, str] = field(default_factory=dict)
    #: the faults given to the node while it runs (``bringup lab inject``), read on demand:
    #: the BMC's health documents show them at once, and stop when ``lab clear`` took them
    injected: Callable[[], list[Fault]] | None = None
    #: the SEL's entries; ``sel_entry`` faults already logged (a log keeps them once written)
    sel: list[dict[str, Any]] = field(default_factory=list)
    sel_logged: list[Fault] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.bios = hardware.initial_bios(self.node, self.sku)
        self.firmware = hardware.firmware(self.node, self.sku)
        from .health_docs import NORMAL_SEL
        now = datetime.now(UTC)
        for hours, sensor_type, code, message in NORMAL_SEL:
            self._log_sel("OK", message, sensor_type, code, now - timedelta(hours=hours))

    # --- health (lab/bmcsim/health_docs.py) ------------------------------------------------
    def health_faults(self, kind: FaultKind) -> list[Fault]:
        """The node's faults of ``kind``: the fleet profile's and those injected now."""
        extra = self.injected() if self.injected is not None else []
        return [*self.node.faults_of(kind), *(f for f in extra if f.kind == kind)]

    def sel_entries(self) -> list[dict[str, Any]]:
        """The SEL now: a ``sel_entry`` fault seen for the first time is logged first."""
        with self.lock:
            for f in self.health_faults(FaultKind.SEL_ENTRY):
                if f not in self.sel_logged:
                    self.sel_logged.append(f)
                    self._log_sel("Critical", str(f.value or "Uncorrectable machine check exception."),
                                  "Processor", "Transition to Critical from less severe", datetime.now(UTC))
            return list(self.sel)

    def _log_sel(self, severity: str, message: str, sensor_type: str, code: str, at: datetime) -> None:
        n = len(self.sel) + 1
        self.sel.append({"Id": str(n), "Severity": severity, "Message": message, "SensorType": sensor_type,
                         "SensorNumber": n, "EntryCode": code, "MessageId": f"0x{0x590000 + n:06X}",
                         "Created": at.strftime("%Y-%m-%dT%H:%M:%S+00:00")})

    @property
    def resets_needed(self) -> int:
        extra = 1 if self.node.has_fault(FaultKind.BIOS_SECOND_RESET) else 0
        return self.profile.bios.resets_needed + extra

    # --- power and POST -------------------------------------------------------------------
    def power_state(self) -> str:
        with self.lock:
            if self.clock() < self.transition_until:
                return "PoweringOn" if self.power_on else "PoweringOff"
            return "On" if self.power_on else "Off"

    def boot_progress(self) -> str:
        with self.lock:
            now = self.clock()
            if not self.power_on:
                return "None"
            if now < self.transition_until:
                return "PrimaryProcessorInitializationStarted"
            if self.booting or now < self.post_until:
                return "MemoryInitializationStarted" if now < (self.transition_until + self.post_until) / 2 \
                    else "PCIResourceConfigStarted"
            return {"installing": "OSBootStarted", "hung": "OSBootStarted",
                    "running": "OSRunning"}.get(self.os_state, "SystemHardwareInitializationComplete")

    def reset(self, reset_type: str) -> None:
        with self.lock:
            target = self.boot_pending.get("BootSourceOverrideTarget", self.boot_target)
            enabled = self.boot_pending.get("BootSourceOverrideEnabled", self.boot_enabled)
            installer_next = self.media_image is not None and target == "Cd" and enabled in {"Once", "Continuous"}
            self._reset(reset_type)
            going_down = installer_next and self.os_state == "running" and reset_type not in {"Nmi", "On", "ForceOn"}
            # each reset and install is logged: a node whose OS went away under a run is found here
            log.info("%s: reset %s (os %s, installer next: %s)", self.node.name, reset_type, self.os_state,
                     bool(installer_next))
            if going_down:
                self.os_state = "none"
        if going_down and self.os_down is not None:
            self.os_down()

    def _reset(self, reset_type: str) -> None:
        with self.lock:
            was_on = self.power_on
            if reset_type in OFF_RESETS - {"PushPowerButton"} or (reset_type == "PushPowerButton" and was_on):
                self.power_on = False
                self.booting = False
                self.transition_until = self.clock() + self.power_delay
            elif reset_type == "Nmi" or (reset_type in {"On", "ForceOn"} and was_on):
                return   # already on: nothing boots
            else:
                self._start_boot()

    def _start_boot(self) -> None:
        now = self.clock()
        self.boots += 1
        self.power_on = True
        self.booting = True
        self.transition_until = now + self.power_delay
        self.post_until = self.transition_until + self.profile.bios.post_delay * self.power_delay
        if self.os_state != "running":
            self.os_state = "none"
        if self.boot_pending:   # the settings object's Boot applies as this boot starts
            self.boot_target = self.boot_pending.get("BootSourceOverrideTarget", self.boot_target)
            self.boot_enabled = self.boot_pending.get("BootSourceOverrideEnabled", self.boot_enabled)
            self.boot_pending = {}

    def tick(self) -> None:
        """Process what is due: the end of a POST, running jobs, finished tasks."""
        with self.lock:
            now = self.clock()
            if self.booting and now >= self.post_until:
                self.booting = False
                self._end_of_post()
            for job in self.jobs.values():
                if job.state == "Running" and now >= job.done_at:
                    self._finish_job(job)
            for task in self.tasks.values():
                if not task.finished and now >= task.done_at:
                    task.finished = True
                    if task.on_done:
                        task.on_done()

    def _end_of_post(self) -> None:
        self.posts_since_staged += 1
        # staged firmware images activate during POST (whoever owns the boot)
        self.firmware.update(self.firmware_staged)
        self.firmware_staged = {}
        job = next((j for j in self.jobs.values() if j.state == "Scheduled"), None)
        if job is not None:
            job.state, job.message = "Running", "Job in progress."
            job.done_at = self.clock() + self.profile.bios.job_delay * self.power_delay
            return   # the Lifecycle Controller owns this boot; the OS does not start
        if self.bios_pending and self.profile.bios.apply == "post" and self.posts_since_staged >= self.resets_needed:
            self._apply_bios(self.bios_pending)
        self._boot_os()

    def _apply_bios(self, attrs: dict[str, Any]) -> None:
        stuck = hardware.stuck_bios_attributes(self.node)
        for attr, value in attrs.items():
            if attr not in stuck:
                self.bios[attr] = value
        self.bios_pending = {}

    def _finish_job(self, job: Job) -> None:
        self._apply_bios(job.attributes)
        job.state, job.message = "Completed", "Job completed successfully."
        if self.profile.bios.reboot_after_apply:
            self._start_boot()
        else:
            self._boot_os()

    def _boot_os(self) -> None:
        """The boot device is chosen: the one-time override is consumed, media may boot."""
        cd = self.boot_enabled in {"Once", "Continuous"} and self.boot_target == "Cd" and self.media_image
        if cd and self.boot_mode != "UEFI":
            self.legacy_boots.append(str(self.media_image))
            self._boot_failed(f"{self.profile.boot_failure_message} (boot mode {self.boot_mode}: "
                              f"{self.media_image} boots in UEFI mode only)")
        elif cd:
            image = str(self.media_image)
            self.installs.append(image)
            if self.node.has_fault(FaultKind.BOOT_FAIL):
                self._boot_failed(f"{self.profile.boot_failure_message} (virtual media {image})")
            else:
                self.os_state = "installing"
                log.info("%s: booting the installer from %s", self.node.name, image)
                threading.Thread(target=self._install, args=(image, self.seed_image, self.boots), daemon=True,
                                 name=f"install-{self.node.name}").start()
        if self.boot_enabled == "Once":
            self.boot_enabled = "Disabled"
            self.boot_target = "None"

    def _install(self, image: str, seed: str | None = None, boot: int | None = None) -> None:
        def current() -> bool:   # no reset since this boot: a reset takes the installer down
            with self.lock:
                return boot is None or boot == self.boots

        with self.install_lock:
            if not current():   # reset again before this boot's installer ran: that boot is gone
                log.info("%s: the install from %s of boot %s is dropped: the node was reset since",
                         self.node.name, image, boot)
                return
            try:
                result = self.installer(image, seed, current) if self.installer is not None else None
            except Exception as exc:
                log.warning("%s: boot from %s failed: %s", self.node.name, image, exc)
                with self.lock:
                    self._boot_failed(f"{self.profile.boot_failure_message} (virtual media {image}: {exc})")
                return
            with self.lock:
                if not current():
                    log.info("%s: the install from %s of boot %s was cut short by a reset", self.node.name,
                             image, boot)
                    return
                hung = isinstance(result, dict) and result.get("installed") is False
                self.os_state = "hung" if hung else "running"
            log.info("%s: install from %s ended: %s", self.node.name, image, self.os_state)

    def _boot_failed(self, message: str) -> None:
        self.os_state = "failed"
        self.log_entries.append({
            "Id": str(len(self.log_entries) + 1), "Severity": "Critical", "Message": message,
            "MessageId": self.profile.boot_failure_message_id, "EntryType": "Event",
            "Created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")})

    # --- BIOS staging -----------------------------------------------------------------------
    def stage_bios(self, attrs: dict[str, Any], apply_time: bool) -> Job | None:
        """Stage attributes; a job-applying BMC makes a job only when asked to apply on reset."""
        with self.lock:
            self.bios_pending.update(attrs)
            self.posts_since_staged = 0
            if self.profile.bios.apply != "job" or not apply_time:
                return None   # without a job iDRAC keeps them pending across reboots
            job = Job(id=f"JID_{secrets.randbelow(10**12):012d}", name="Configure: BIOS.Setup.1-1",
                      attributes=dict(self.bios_pending))
            self.jobs = {k: j for k, j in self.jobs.items() if j.state != "Scheduled"}
            self.jobs[job.id] = job
            return job

    # --- sessions and tasks -------------------------------------------------------------------
    def new_session(self) -> tuple[str, str]:
        with self.lock:
            sid = secrets.token_hex(8)
            token = secrets.token_urlsafe(24)
            self.sessions[sid] = token
            return sid, token

    def token_valid(self, token: str) -> bool:
        with self.lock:
            return any(secrets.compare_digest(token, t) for t in self.sessions.values())

    def start_task(self, name: str, duration: float, on_done: Callable[[], None] | None) -> Task:
        with self.lock:
            now = self.clock()
            task = Task(id=secrets.token_hex(4), name=name, started=now, done_at=now + duration, on_done=on_done)
            self.tasks[task.id] = task
            return task

    def task_finished(self, task: Task) -> bool:
        self.tick()
        return task.finished

    def task_state(self, task: Task) -> str:
        """New (until ``new_until``), then Running; Completed or Exception at the end."""
        if self.task_finished(task):
            return "Exception" if task.failure else "Completed"
        return "New" if self.clock() < task.new_until else "Running"
