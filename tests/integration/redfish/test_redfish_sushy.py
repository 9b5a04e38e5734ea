"""The client against OpenStack's sushy-emulator (--fake driver): power, boot, media."""

from __future__ import annotations

import pytest

from bringup.redfish import Credentials, connect

pytestmark = pytest.mark.integration
CREDS = Credentials("admin", "password")  # the emulator does not check them without an auth file


def test_power_transition_is_waited_for(sushy):
    # the fake driver applies a power change 1-11 s after the request, like real hardware
    with connect(sushy, CREDS, retries=0) as bmc:
        before = bmc.system().PowerState
        action, want = ("ForceOff", "Off") if before == "On" else ("On", "On")
        assert bmc.power(action, timeout=20) == want
        assert bmc.system().PowerState == want


def test_boot_override_uses_the_documented_quirk(sushy):
    with connect(sushy, CREDS, retries=0) as bmc:
        assert "sushy-libvirt-boot-always-continuous" in bmc.quirks.applied
        bmc.set_boot_once("Pxe")
        assert bmc.system().Boot.BootSourceOverrideTarget == "Pxe"
        bmc.set_boot_once("Cd")
        assert bmc.system().Boot.BootSourceOverrideTarget == "Cd"


def test_boot_override_without_the_quirk_is_refused(sushy):
    with connect(sushy, CREDS, retries=0, quirks={"boot_once_may_read_continuous": False}) as bmc:
        from bringup.errors import RedfishError
        with pytest.raises(RedfishError, match="did not stick"):
            bmc.set_boot_once("Cd")


def test_virtual_media_insert_and_eject(sushy, image_server):
    with connect(sushy, CREDS, retries=0) as bmc:
        bmc.insert_media(image_server)
        _, media = bmc._cd_media()
        assert media.Inserted and media.Image == image_server
        bmc.eject_media()
        _, media = bmc._cd_media()
        assert not media.Inserted
