"""Provisioning steps through the BMC (Redfish): the BIOS profile and the OS install
over virtual media. Each function is one step and is handed its BMC session.

A BIOS attribute that did not take is a *result* (``BiosResult.ok`` false, with the
attributes named), not an exception, and so is a boot from the media that the BMC reports
as failed (``InstallResult.boot_failure``): the lifecycle decides what it means for the node.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from bringup.errors import ControllerFault, HostKeyMismatch, SSHError
from bringup.provision.image import ImageManifest
from bringup.retry import Backoff, Timeout, poll


class Bmc(Protocol):
    """What these steps need of :class:`bringup.redfish.bmc.Bmc`."""

    def apply_bios(self, wanted: dict[str, Any], reboot: bool = True, timeout: float = 300.0) -> Any: ...
    def insert_media(self, image_url: str, timeout: float = 120.0) -> None: ...
    def eject_media(self) -> None: ...
    def insert_seed(self, seed_url: str, timeout: float = 120.0) -> None: ...
    def eject_seed(self) -> None: ...
    def set_boot_once(self, target: str) -> None: ...
    def power(self, action: str, wait: bool = True, timeout: float = 120.0) -> str: ...
    def system(self) -> Any: ...
    def log_marker(self) -> set[str]: ...
    def boot_failure(self, before: set[str]) -> str | None: ...


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
    #: the NoCloud seed attached as the second medium (None: the installer asks its questions)
    seed_url: str | None = None
    #: what the BMC said went wrong with the boot from the media (the install did not happen)
    boot_failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.boot_failure is None


def install_os(bmc: Bmc, manifest: ImageManifest, media_url: str | None = None, *,
               seed_url: str | None = None, wait: Callable[[], Any] | None = None, ssh_wait: Callable[[float], Any] | None = None,
               wait_timeout: float = 300.0, poll: float = 15.0, timeout: float = 120.0) -> InstallResult:
    """Boot the node once from the image as virtual CD: insert, boot-once Cd, reset.
    ``seed_url``: the node's NoCloud seed image, attached as a second medium before the
    reset so the installer runs unattended (:mod:`bringup.provision.install_seed`).

    Then wait for the node with ``ssh_wait(seconds)`` (e.g. :func:`bringup.remote.ssh.wait_for_ssh`
    with the timeout left open), in slices of ``poll`` seconds up to ``wait_timeout``,
    asking the BMC between slices whether the boot failed: a BMC that says so (a new log
    entry, BootProgress stuck before the OS) ends the wait at once with ``boot_failure``
    set, instead of waiting for SSH until the timeout. ``wait`` is the older form, a call
    that does the whole wait itself (the BMC is not asked meanwhile). The media is ejected
    after the wait, whatever it returns or raises, so the next reboot boots the installed
    disk. Without either the media stays in: a live installer reads it until it finishes;
    call ``bmc.eject_media()`` when the node is back."""
    url = media_url or manifest.iso.url
    bmc.insert_media(url, timeout=timeout)
    if seed_url:
        bmc.insert_seed(seed_url, timeout=timeout)
    bmc.set_boot_once("Cd")
    marker = bmc.log_marker() if ssh_wait is not None else set()
    state = getattr(bmc.system(), "PowerState", None)
    action = "ForceRestart" if state == "On" else "On"
    bmc.power(action, wait=True, timeout=timeout)
    result = InstallResult(image=manifest.name, media_url=url, power_action=action, seed_url=seed_url)
    if wait is None and ssh_wait is None:
        return result
    try:
        if ssh_wait is not None:
            result.waited, result.boot_failure = _wait_watching_bmc(bmc, ssh_wait, marker, wait_timeout,
                                                                    poll_s=poll)
        else:
            assert wait is not None  # noqa: S101  (narrows the type: set on the branch above)
            result.waited = wait()
    finally:
        bmc.eject_media()
        if seed_url:
            bmc.eject_seed()  # it holds the node's private host key
        result.ejected = True
    return result


@dataclass
class _NoAnswerYet:
    """One slice of the wait ended without SSH and without a boot failure from the BMC."""

    error: SSHError
    slice_s: float


def _wait_watching_bmc(bmc: Bmc, ssh_wait: Callable[[float], Any], marker: set[str], wait_timeout: float,
                       poll_s: float) -> tuple[Any, str | None]:
    # looked up at each call: tests move time.monotonic/time.sleep
    def clock() -> float:
        return time.monotonic()

    def sleep(seconds: float) -> None:
        time.sleep(seconds)

    ends: list[float] = []   # the wait's end, set by the first slice: never before poll's own

    def one_slice() -> tuple[Any, str | None] | _NoAnswerYet:
        started = clock()
        if not ends:
            ends.append(started + wait_timeout)
        end = ends[0]
        slice_s = max(0.1, min(poll_s, end - started))
        try:
            return ssh_wait(slice_s), None
        except (HostKeyMismatch, ControllerFault):
            raise  # another key, or our own key or known_hosts refused: waiting longer cannot help
        except SSHError as exc:
            failure = bmc.boot_failure(marker)
            if failure is not None:
                return None, failure
            # a wait that gave up early (refused at once) must not turn this into a BMC poll
            # loop: the slice is served in full before the next one
            sleep(max(0.0, min(started + slice_s, end) - clock()))
            return _NoAnswerYet(exc, slice_s)

    try:
        # the slices pace themselves (above): no pause between them
        return poll(one_slice, timeout=wait_timeout, what="the node's SSH after its install",
                    done=lambda answer: not isinstance(answer, _NoAnswerYet),
                    backoff=Backoff(first=0.0, factor=1.0, cap=0.0), sleep=sleep, clock=clock)  # type: ignore[return-value]
    except Timeout as timeout:
        last = timeout.last
        assert isinstance(last, _NoAnswerYet)  # noqa: S101  (narrows the type: poll's last answer)
        exc = last.error
        # the last slice's error says "within <slice>s": say how long we waited in all
        raise SSHError(str(exc.args[0] if exc.args else exc).replace(
            f"within {last.slice_s:.0f}s", f"within {wait_timeout:.0f}s", 1),
                       hint=getattr(exc, "hint", "")) from exc
