"""Provisioning steps through the BMC (Redfish): the BIOS profile and the OS install
over virtual media. Each function is one step and is handed its BMC session.

A BIOS attribute that did not take is a *result* (``BiosResult.ok`` false, with the
attributes named), not an exception: the lifecycle decides what it means for the node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..image import ImageManifest


class Bmc(Protocol):
    """What these steps need of :class:`bringup.redfish.client.Bmc`."""

    def apply_bios(self, wanted: dict[str, Any], reboot: bool = True, timeout: float = 300.0) -> Any: ...
    def insert_media(self, image_url: str, timeout: float = 120.0) -> None: ...
    def eject_media(self) -> None: ...
    def set_boot_once(self, target: str) -> None: ...
    def power(self, action: str, wait: bool = True, timeout: float = 120.0) -> str: ...
    def system(self) -> Any: ...


# --- BIOS ------------------------------------------------------------------------------
def apply_bios_profile(bmc: Bmc, wanted: dict[str, Any], *, timeout: float = 300.0) -> Any:
    """Apply the SKU's BIOS attributes, reset, read back. Returns the adapter's BiosResult
    whatever it says: ``not_applied`` names each attribute that did not take."""
    return bmc.apply_bios(wanted, reboot=True, timeout=timeout)


# --- OS install ------------------------------------------------------------------------
@dataclass
class InstallResult:
    image: str
    media_url: str
    power_action: str
    waited: Any = None
    ejected: bool = False


def install_os(bmc: Bmc, manifest: ImageManifest, media_url: str | None = None, *,
               wait: Callable[[], Any] | None = None, timeout: float = 120.0) -> InstallResult:
    """Boot the node once from the image as virtual CD: insert, boot-once Cd, reset.

    ``wait`` (e.g. a :func:`bringup.ssh.wait_for_ssh` partial) is called after the reset;
    the media is ejected after it, whatever it returns or raises, so the next reboot
    boots the installed disk. Without ``wait`` the media stays in: a live installer
    reads it until it finishes; call ``bmc.eject_media()`` when the node is back."""
    url = media_url or manifest.iso.url
    bmc.insert_media(url, timeout=timeout)
    bmc.set_boot_once("Cd")
    state = getattr(bmc.system(), "PowerState", None)
    action = "ForceRestart" if state == "On" else "On"
    bmc.power(action, wait=True, timeout=timeout)
    result = InstallResult(image=manifest.name, media_url=url, power_action=action)
    if wait is None:
        return result
    try:
        result.waited = wait()
    finally:
        bmc.eject_media()
        result.ejected = True
    return result
