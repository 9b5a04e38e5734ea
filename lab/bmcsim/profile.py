"""Vendor profiles of the BMC simulator: each vendor's layout and quirks, as data.

A profile (``lab/bmcsim/vendors/<name>.yaml``) says where a vendor's BMC puts things
(system, chassis and manager ids, where GPUs and virtual media live, how adapters and
ports are named and whether they say their slot) and how it behaves (where boot
overrides are taken, how BIOS settings apply, how an action's task is reported). The
simulator's code reads these fields; it never asks which vendor it is. Every profile
names the public sources it follows (see tests/fixtures/redfish/*/README.md).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.errors import ConfigError
from bringup.yamlio import load_file, validation_error

VENDORS_DIR = Path(__file__).with_name("vendors")
DEFAULT_PROFILE = "bmcsim"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServiceSpec(_Strict):
    vendor: str
    product: str
    redfish_version: str = "1.20.0"
    #: deepest $expand served (0: none); Supermicro advertises 2, bmcweb 6
    expand_max_levels: int = Field(default=6, ge=0, le=6)


class SystemSpec(_Strict):
    id: str = "1"
    manufacturer: str
    model: str
    #: the settings object of the BIOS, relative to the system ("Bios/Settings", "Bios/SD")
    bios_settings: str = "Bios/Settings"
    #: "system": a Boot PATCH on the system works; "settings": the system refuses it (400,
    #: ``refusal_message_id``) and takes it at ``settings_object``, applied at next boot
    boot_override: Literal["system", "settings"] = "system"
    settings_object: str = "SD"
    refusal_message_id: str = "Base.1.18.PropertyNotWritable"
    #: BootSourceOverrideMode a Boot PATCH without it resets the mode to (Supermicro), or null
    boot_mode_when_omitted: str | None = None
    #: False: a Boot PATCH carrying BootSourceOverrideMode is refused with 400 (HPE iLO)
    boot_mode_writable: bool = True
    virtual_media: Literal["system", "manager"] = "system"
    virtual_media_id: str = "Cd"
    #: the second virtual medium (where bringup puts a node's NoCloud seed): the DMTF
    #: mockups' removable-media member ``Floppy1`` with MediaTypes Floppy/USBStick
    seed_media_id: str = "Floppy1"
    seed_media_types: list[str] = ["Floppy", "USBStick"]


class GpuSpec(_Strict):
    #: host processors; a second system (HGX baseboard); PCIe devices only; or only HPE's own
    #: resources (``hpe_oem``: Chassis Devices + System PCIDevices, linked from ``Oem.Hpe.Links``,
    #: no GPU Processor and an empty PCIeDevices collection, as iLO 5 on Gen10/Gen10 Plus:
    #: tests/fixtures/redfish/hpe-ilo5-oem-devices)
    placement: Literal["host", "baseboard", "pcie", "hpe_oem"] = "host"
    #: what each GPU reports as SerialNumber: its own; its board's (``per_board`` GPUs on a
    #: board, as Grace-Blackwell trays); or a placeholder (tests/fixtures/redfish/gpu-serial-identity)
    serials: Literal["unique", "board", "placeholder"] = "unique"
    per_board: int = Field(default=2, ge=1)
    placeholder_serial: str = "0000000000000"
    baseboard_id: str = "HGX_Baseboard_0"
    #: ``{i}`` the GPU index, ``{n}`` index + 1, ``{slot}`` its PCIe slot
    processor_id: str = "GPU{i}"
    pcie_id: str = "GPU{i}"
    chassis_id: str | None = None            # one chassis per GPU (HGX_GPU_SXM_{n}), or none
    manufacturer: str = "NVIDIA Corporation"
    first_slot: int = 1


class NicSpec(_Strict):
    adapter_id: str = "NIC{i}"
    port_schema: Literal["Ports", "NetworkPorts"] = "Ports"
    port_id: str = "1"
    system_interface_id: str = "cx{i}"
    mgmt_interface_id: str = "mgmt0"
    first_slot: int = 1
    #: adapters carry Location.PartLocation (slot ordinal); Dell gives only the Id
    location: bool = True


class BiosSpec(_Strict):
    """How staged BIOS settings apply. Times are multiples of the simulator's power delay."""

    #: "post": applied during a later POST; "job": by a configuration job the PATCH
    #: creates (only when it carries @Redfish.SettingsApplyTime), run during POST
    apply: Literal["post", "job"] = "post"
    post_delay: float = 1.0
    job_delay: float = 1.0
    #: the firmware resets the host once more after applying (Dell's Lifecycle Controller)
    reboot_after_apply: bool = False
    #: POSTs after staging before the settings apply
    resets_needed: int = Field(default=1, ge=1, le=3)
    #: the settings object shows every attribute (HPE's "future" BIOS), not only changes
    settings_holds_all: bool = False
    #: answer to the settings PATCH: 204, 200 + "SystemResetRequired" (iLO), 202 + job
    patch_answer: Literal["204", "200-reset-required", "202-job"] = "204"
    job_uri: str = "/redfish/v1/Managers/{manager}/Jobs/JID_{n}"


class UpdateSpec(_Strict):
    """How firmware updates are taken (UpdateService). Times are multiples of the power delay."""

    #: the ``#UpdateService.SimpleUpdate`` action (pull from ImageURI); False: push only
    simple_update: bool = True
    #: ``MultipartHttpPushUri`` advertised (the AMI-based DGX BMC: fixtures/redfish/nvidia-nvfwupd)
    multipart_push: bool = False
    #: how long the Task of an update runs (New, then Running, then Completed)
    task_delay: float = 1.5
    #: members (regex on the Id) whose new image waits for the next POST to activate, as
    #: host BIOS and GPU/NVSwitch firmware do; the others activate when the task ends
    staged: str = "(?i)bios|vbios|gpu|nvswitch|cpld"


class HealthSpec(_Strict):
    """What the BMC shows of the server's health (issue #27 item 4): the chassis Sensors,
    PowerSubsystem/PowerSupplies, leak detectors where the chassis is liquid cooled, and a
    SEL (shapes: tests/fixtures/redfish/dmtf-rackmount1-health, gofish-leak-detector)."""

    psus: int = Field(default=4, ge=2, le=8)
    #: ``{n}`` the PSU's index
    psu_id: str = "PSU{n}"
    #: ThermalSubsystem/LeakDetection/LeakDetectors served (cold plates and manifold)
    liquid_cooled: bool = False
    #: SKUs (a regex on the slug) whose chassis is liquid cooled under this BMC, besides the above
    liquid_skus: str = "(?!)"
    leak_detectors: list[str] = ["Chassis_0_LeakDetector_0_ColdPlate", "Chassis_0_LeakDetector_1_Manifold"]
    #: where the SEL LogService lives and its Id (iDRAC: the manager's ``Sel``; iLO: ``IML``)
    sel_owner: Literal["system", "manager"] = "system"
    sel_id: str = "SEL"


class ManagerSpec(_Strict):
    id: str = "bmc"
    model: str = "AST2600"


class VendorProfile(_Strict):
    name: str
    description: str
    sources: list[str] = Field(min_length=1)
    service: ServiceSpec
    system: SystemSpec
    manager: ManagerSpec = ManagerSpec()
    chassis_id: str = "1"
    gpus: GpuSpec = GpuSpec()
    nics: NicSpec = NicSpec()
    bios: BiosSpec = BiosSpec()
    update: UpdateSpec = UpdateSpec()
    health: HealthSpec = HealthSpec()
    #: where an action's Location points: a monitor (202 until done) or the Task (200 + TaskState)
    task_location: Literal["monitor", "task"] = "monitor"
    #: the log entry a failed boot leaves (Message, MessageId)
    boot_failure_message: str = "No bootable device found."
    boot_failure_message_id: str = "OpenBMC.0.4.BIOSBootFailure"


def profile_names() -> list[str]:
    return sorted(p.stem for p in VENDORS_DIR.glob("*.yaml"))


@cache
def load_profile(name: str = DEFAULT_PROFILE) -> VendorProfile:
    path = VENDORS_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"no BMC vendor profile {name!r}",
                          hint=f"profiles are: {', '.join(profile_names())} (lab/bmcsim/vendors/)")
    doc = load_file(path)
    try:
        return VendorProfile.model_validate(doc.data or {})
    except ValidationError as exc:
        raise validation_error(exc, doc, "BMC vendor profile") from None
