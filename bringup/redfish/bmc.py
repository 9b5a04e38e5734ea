"""The BMC adapter's front: :func:`connect` and :class:`Bmc`, the only Redfish API callers use.

The work is done by one module per Redfish resource beside this one: :mod:`.session`
(the service root and SessionService: HTTP, TLS, retries, login), :mod:`.system` (the
host ComputerSystem: power, one-time boot, POST, boot failures), :mod:`.bios` (its staged
BIOS settings), :mod:`.manager` (virtual media), :mod:`.chassis` (adapters and PCIe
GPUs), :mod:`.update_service` (FirmwareInventory and updates) and :mod:`.task` (Tasks
and Dell Jobs); :mod:`.inventory` puts their readings together, :mod:`.responses` is the
status map, :mod:`.reader` reads collections. Vendor differences are data in
``quirks.yaml``, applied once the host system's make is known.
"""

from __future__ import annotations

from typing import Any, Self

from bringup.errors import RedfishError, RedfishServerError
from bringup.redfish import bios, inventory, manager, system, update_service
from bringup.redfish.models import BiosDoc, SystemDoc, VirtualMediaDoc, parse
from bringup.redfish.quirks import Quirks, quirks_for
from bringup.redfish.reader import members
from bringup.redfish.session import Credentials, Session
from bringup.redfish.views import BiosResult, Inventory, Software

__all__ = ["Bmc", "Credentials", "connect"]


class Bmc:
    """A logged-in Redfish session to one BMC. Get one from :func:`connect`."""

    def __init__(self, address: str, creds: Credentials, *, port: int = 443, ca_bundle: str | None = None,
                 insecure: bool = False, timeout: float = 10.0, retries: int = 3,
                 quirks: dict[str, Any] | None = None, system_levels: int = 1) -> None:
        self.address = address
        self.session = Session(address, creds, port=port, ca_bundle=ca_bundle, insecure=insecure,
                               timeout=timeout, retries=retries)
        # how deep login reads the systems: 3 inlines processors, memory, NICs and the BIOS
        # (where the BMC's $expand allows), so a following inventory() needs no more requests
        self.system_levels = max(1, system_levels)
        self._quirk_overrides = quirks
        self.quirks: Quirks = quirks_for(None, None, quirks)
        self.session.expand = self.quirks.expand
        self.system_uri = ""
        #: every system as login read it (uri, raw): the first inventory() reuses them
        self._fresh: list[tuple[str, dict[str, Any]]] | None = None

    # --- session ------------------------------------------------------------------------
    @property
    def request_count(self) -> int:
        return self.session.request_count

    @property
    def base_url(self) -> str:
        return self.session.base_url

    @property
    def root(self):
        return self.session.root

    def login(self) -> Bmc:
        root = self.session.login()
        systems = members(self.session, root.Systems.odata_id, levels=self.system_levels)
        if not systems:   # a BMC still starting its Redfish service: ask again later
            raise RedfishServerError(f"{self.session.name} lists no ComputerSystem",
                                     hint="check the BMC is fully booted")
        uri, doc = system.host_system(systems)
        host = parse(SystemDoc, doc, uri)
        self.system_uri = uri
        self._fresh = systems
        self.quirks = quirks_for(host.Manufacturer, host.Model, self._quirk_overrides)
        self.session.expand = self.quirks.expand
        return self

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.session.get(path, args)

    # --- reading ------------------------------------------------------------------------
    def system(self) -> SystemDoc:
        return parse(SystemDoc, self.session.get(self.system_uri), self.system_uri)

    def inventory(self) -> Inventory:
        """Everything the BMC says about the hardware; odd members are ``unavailable`` entries."""
        systems, self._fresh = self._fresh, None
        if systems is None:
            root = self.session.root
            assert root is not None  # noqa: S101  (narrows the type: the session read it)
            systems = members(self.session, root.Systems.odata_id, levels=self.system_levels)
        raw = dict(systems).get(self.system_uri) or self.session.get(self.system_uri)
        return inventory.read(self, raw, parse(SystemDoc, raw, self.system_uri), systems)

    def bios_attributes(self) -> dict[str, Any]:
        sysdoc = self.system()
        if not sysdoc.Bios:
            raise RedfishError(f"{self.session.name}: the system exposes no Bios resource")
        return parse(BiosDoc, self.session.get(sysdoc.Bios.odata_id), sysdoc.Bios.odata_id).Attributes

    # --- actions ------------------------------------------------------------------------
    def power(self, action: str, wait: bool = True, timeout: float = 120.0) -> str:
        """Reset the system (On, ForceOff, GracefulShutdown, ForceRestart...); returns the PowerState."""
        return system.power(self, action, wait, timeout)

    def set_boot_once(self, target: str) -> None:
        """Boot from ``target`` (Cd, Pxe, Hdd...) on the next boot only."""
        system.set_boot_once(self, target)

    def clear_boot_override(self) -> None:
        system.clear_boot_override(self)

    def _cd_media(self) -> tuple[str, VirtualMediaDoc]:
        return manager.cd_media(self)

    def insert_media(self, image_url: str, timeout: float = 120.0) -> None:
        manager.insert_media(self, image_url, timeout)

    def eject_media(self) -> None:
        manager.eject_media(self)

    def insert_seed(self, seed_url: str, timeout: float = 120.0) -> None:
        manager.insert_seed(self, seed_url, timeout)

    def eject_seed(self) -> None:
        manager.eject_seed(self)

    def log_marker(self) -> set[str]:
        """The system log entries present now; pass to :meth:`boot_failure` after a reset."""
        return system.log_marker(self)

    def boot_failure(self, before: set[str]) -> str | None:
        """What the BMC says went wrong with the host's boot since ``before``, or None."""
        return system.boot_failure(self, before)

    def apply_bios(self, wanted: dict[str, Any], reboot: bool = True, timeout: float = 300.0) -> BiosResult:
        """Stage ``wanted``, reset, wait until the BMC applied it (bounded), read back what took."""
        return bios.apply_bios(self, wanted, reboot, timeout)

    def firmware(self) -> list[Software]:
        """The FirmwareInventory members (id, name, version, URI)."""
        return update_service.firmware_members(self)

    def update_firmware(self, image: str, targets: list[str], *, reset: bool | None = None,
                        timeout: float | None = None, fetch=update_service.fetch_image) -> update_service.UpdateOutcome:
        """Apply ``image`` to the members ``targets``, follow the task, reset where the image is
        staged, and read the members back (:func:`bringup.redfish.update_service.update_firmware`)."""
        return update_service.update_firmware(self, image, targets, reset=reset, timeout=timeout, fetch=fetch)


def connect(address: str, creds: Credentials, port: int = 443, ca_bundle: str | None = None,
            insecure: bool = False, timeout: float = 10.0, retries: int = 3,
            quirks: dict[str, Any] | None = None, for_inventory: bool = False) -> Bmc:
    """Log in to the BMC at ``address`` (or a full ``https://host:port`` URL) and return it.

    Use as a context manager so the session is logged out: ``with connect(...) as bmc:``.
    ``for_inventory`` reads the systems' subtrees at login (one ``$expand`` request instead
    of several), for callers that go on to call ``inventory()``.
    """
    bmc = Bmc(address, creds, port=port, ca_bundle=ca_bundle, insecure=insecure, timeout=timeout,
              retries=retries, quirks=quirks, system_levels=3 if for_inventory else 1)
    try:
        return bmc.login()
    except BaseException:
        bmc.close()
        raise
