"""The mutable state of one simulated BMC and the effects of its actions.

Power transitions take ``power_delay`` seconds and are evaluated lazily against a clock
(no timer threads for 256 BMCs). BIOS changes PATCHed to the Settings resource stay
pending until the system resets, like on real servers. A reset into power-on with virtual
media inserted and a one-time boot override to ``Cd`` is "the OS installs".
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bringup.sku import SkuSpec
from lab.fleet import NodeSpec

from . import hardware

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


@dataclass
class BmcState:
    node: NodeSpec
    sku: SkuSpec
    power_delay: float = 1.0
    clock: Callable[[], float] = time.monotonic
    #: called as installer(image_url) when the OS "installs" from virtual media
    installer: Callable[[str], None] | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    power_on: bool = True
    transition_until: float = 0.0
    boot_target: str = "None"
    boot_enabled: str = "Disabled"
    #: like the Supermicro BMCs this imitates, a Boot PATCH without the mode resets it to Legacy
    boot_mode: str = "UEFI"
    #: images the system tried to boot in Legacy mode (the install images are UEFI-only)
    legacy_boots: list[str] = field(default_factory=list)
    media_image: str | None = None
    bios: dict[str, Any] = field(default_factory=dict)
    bios_pending: dict[str, Any] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)   # id -> token
    tasks: dict[str, Task] = field(default_factory=dict)
    installs: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.bios = hardware.initial_bios(self.node, self.sku)

    # --- power --------------------------------------------------------------------------
    def power_state(self) -> str:
        with self.lock:
            if self.clock() < self.transition_until:
                return "PoweringOn" if self.power_on else "PoweringOff"
            return "On" if self.power_on else "Off"

    def reset(self, reset_type: str) -> None:
        with self.lock:
            was_on = self.power_on
            if reset_type in OFF_RESETS - {"PushPowerButton"} or (reset_type == "PushPowerButton" and was_on):
                self.power_on = False
            elif reset_type == "Nmi":
                return
            else:
                if reset_type in {"On", "ForceOn"} and was_on:
                    return  # already on: nothing boots
                self.power_on = True
                self._boot()
            self.transition_until = self.clock() + self.power_delay

    def _boot(self) -> None:
        """Effects of the system starting: pending BIOS applies, boot override is consumed."""
        stuck = hardware.stuck_bios_attributes(self.node)
        for attr, value in self.bios_pending.items():
            if attr not in stuck:
                self.bios[attr] = value
        self.bios_pending = {}
        if self.boot_enabled in {"Once", "Continuous"} and self.boot_target == "Cd" and self.media_image \
                and self.boot_mode != "UEFI":
            self.legacy_boots.append(self.media_image)
        elif self.boot_enabled in {"Once", "Continuous"} and self.boot_target == "Cd" and self.media_image:
            self.installs.append(self.media_image)
            if self.installer is not None:
                image = self.media_image
                threading.Thread(target=self.installer, args=(image,), daemon=True,
                                 name=f"install-{self.node.name}").start()
        if self.boot_enabled == "Once":
            self.boot_enabled = "Disabled"
            self.boot_target = "None"

    # --- sessions ----------------------------------------------------------------------
    def new_session(self) -> tuple[str, str]:
        with self.lock:
            sid = secrets.token_hex(8)
            token = secrets.token_urlsafe(24)
            self.sessions[sid] = token
            return sid, token

    def token_valid(self, token: str) -> bool:
        with self.lock:
            return any(secrets.compare_digest(token, t) for t in self.sessions.values())

    # --- tasks -------------------------------------------------------------------------
    def start_task(self, name: str, duration: float, on_done: Callable[[], None]) -> Task:
        with self.lock:
            now = self.clock()
            task = Task(id=secrets.token_hex(4), name=name, started=now, done_at=now + duration,
                        on_done=on_done)
            self.tasks[task.id] = task
            return task

    def task_finished(self, task: Task) -> bool:
        with self.lock:
            if not task.finished and self.clock() >= task.done_at:
                task.finished = True
                if task.on_done:
                    task.on_done()
            return task.finished
