"""The BMC adapter: the only code in bringup that speaks Redfish.

Built on DMTF's python-redfish-library (``redfish.redfish_client``), which does the HTTP,
sessions and Basic auth. This module adds what a fleet needs on top:

- TLS verification on by default. The library verifies only when given a ``cafile``
  (``verify=False`` otherwise), so we always hand it one: the operator's CA bundle, or
  certifi's store; ``insecure=True`` is the only way to turn verification off.
- Our own retries with exponential backoff, on connection errors and 5xx only (the
  library's ``max_retry`` retries everything after a fixed 1 s, so it is set to 0).
- 401/403 -> :class:`RedfishAuthError` naming the BMC; garbage JSON -> :class:`ParseError`.
- ``$expand`` on collections when the service advertises it (one request per collection
  instead of one per member), falling back to GETting members that come back unexpanded.
- Task monitors for actions answered with 202, vendor quirks from ``quirks.yaml``.
- ``request_count``: HTTP requests actually sent (retries included), for the benchmark.
"""

from __future__ import annotations

import logging
import os
import random
import re
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Self

import certifi
import requests
from redfish import redfish_client
from redfish.rest.v1 import (
    InvalidCredentialsError,
    JsonDecodingError,
    RetriesExhaustedError,
    ServerDownOrUnreachableError,
    SessionCreationError,
)
from requests.adapters import HTTPAdapter
from urllib3.util.ssl_ import create_urllib3_context

from bringup.errors import (
    ConfigError,
    ParseError,
    RedfishAuthError,
    RedfishError,
    RedfishNotFoundError,
    RedfishRequestError,
    RedfishServerError,
    RedfishTimeoutError,
    RedfishTLSError,
)

from .models import (
    BiosDoc,
    BiosResult,
    ChassisDoc,
    CollectionDoc,
    Cpu,
    Dimm,
    EthernetInterfaceDoc,
    Gpu,
    Inventory,
    ManagerDoc,
    MemoryDoc,
    NetworkAdapterDoc,
    Nic,
    PCIeDeviceDoc,
    PortDoc,
    ProcessorDoc,
    ServiceRootDoc,
    SoftwareDoc,
    SystemDoc,
    SystemInfo,
    VirtualMediaDoc,
    normalise_mac,
    parse,
)
from .quirks import Quirks, quirks_for

log = logging.getLogger(__name__)

ROOT = "/redfish/v1/"
POWER_TARGET = {"On": "On", "ForceOn": "On", "ForceRestart": "On", "GracefulRestart": "On",
                "PowerCycle": "On", "ForceOff": "Off", "GracefulShutdown": "Off"}
BACKOFF_BASE = 0.25
BACKOFF_MAX = 4.0


@dataclass(frozen=True)
class Credentials:
    """BMC user name and password; the password never appears in repr or logs."""

    username: str
    password: str = field(repr=False)


_contexts: dict[tuple[str, float], ssl.SSLContext] = {}
_contexts_lock = threading.Lock()


def _verifying_context(cafile: str) -> ssl.SSLContext:
    """One verifying TLS context per CA bundle (and its mtime), shared by every BMC session.

    requests would otherwise build a context and parse the bundle again for each BMC's
    connection pool: about half a millisecond of CPU per BMC, which is most of what a
    discovery of a large fleet spends outside the HTTP exchanges themselves.
    """
    key = (cafile, os.stat(cafile).st_mtime)
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
            ctx.load_verify_locations(cafile=cafile)
            _contexts[key] = ctx
        return ctx


class _CountingAdapter(HTTPAdapter):
    """Counts every HTTP request the session sends (the library's and ours).

    With ``ssl_context`` the pools use that (already loaded) context instead of a CA path,
    the way requests documents for custom contexts.
    """

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl_context = ssl_context
        super().__init__(pool_connections=1, pool_maxsize=2, max_retries=0)
        self.count = 0

    def build_connection_pool_key_attributes(self, request, verify, cert=None):  # type: ignore[override]
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        if self._ssl_context is not None and verify:
            pool_kwargs.pop("ca_certs", None)
            pool_kwargs.pop("ca_cert_dir", None)
            pool_kwargs["ssl_context"] = self._ssl_context
        return host_params, pool_kwargs

    def cert_verify(self, conn, url, verify, cert):  # type: ignore[override]
        if self._ssl_context is not None and verify:
            conn.cert_reqs = "CERT_REQUIRED"   # the context holds the CAs: nothing to load per pool
            return
        super().cert_verify(conn, url, verify, cert)

    def send(self, request, **kwargs):  # type: ignore[override]
        self.count += 1
        return super().send(request, **kwargs)


@dataclass
class _Reply:
    status: int
    doc: Any
    headers: dict[str, str]


def _is_expanded(ref: dict[str, Any]) -> bool:
    """A reference that came back with its resource inlined (more than ``@odata.*`` keys)."""
    # every resource and collection has a Name: the common case without scanning the keys
    return "Name" in ref or any(not k.startswith("@odata.") for k in ref)


def _message(doc: Any) -> str:
    """The first human message of a Redfish error body, if any."""
    if isinstance(doc, dict):
        err = doc.get("error") or {}
        info = err.get("@Message.ExtendedInfo") or []
        if info and isinstance(info[0], dict) and info[0].get("Message"):
            return str(info[0]["Message"])
        if err.get("message"):
            return str(err["message"])
    return ""


class Bmc:
    """A logged-in Redfish session to one BMC. Get one from :func:`connect`."""

    def __init__(self, address: str, creds: Credentials, *, port: int = 443, ca_bundle: str | None = None,
                 insecure: bool = False, timeout: float = 10.0, retries: int = 3,
                 quirks: dict[str, Any] | None = None, system_levels: int = 1) -> None:
        self.address = address
        # how deep login reads the system: 3 inlines processors, memory, NICs and the BIOS
        # (where the BMC's $expand allows), so a following inventory() needs no more requests
        self.system_levels = max(1, system_levels)
        self.base_url = address.rstrip("/") if "://" in address else f"https://{address}:{port}"
        self.timeout = timeout
        self.retries = max(0, retries)
        self._quirk_overrides = quirks
        self.quirks: Quirks = quirks_for(None, None, quirks)
        if insecure:
            cafile = None          # the library then passes verify=False to requests
        else:
            cafile = str(ca_bundle) if ca_bundle else certifi.where()
        self._adapter = _CountingAdapter(_verifying_context(cafile) if cafile else None)
        self._client = redfish_client(base_url=self.base_url, username=creds.username, password=creds.password,
                                      cafile=cafile, timeout=timeout, max_retry=0, check_connectivity=False,
                                      https_adapter=self._adapter)
        if self.base_url.startswith("http://"):
            self._client._session.mount("http://", self._adapter)
        # BMC traffic never goes through proxies or .netrc from the environment (and skipping
        # that lookup per request is measurably cheaper across a fleet)
        self._client._session.trust_env = False
        self._logged_in = False
        self._session_auth = False   # True once logged in with a SessionService session
        self.root: ServiceRootDoc | None = None
        self.system_uri = ""
        #: the system as login read it (raw, parsed): the first inventory() reuses both
        self._fresh_system: tuple[dict[str, Any], SystemDoc] | None = None

    # --- plumbing -----------------------------------------------------------------------
    @property
    def request_count(self) -> int:
        return self._adapter.count

    def _name(self) -> str:
        return f"BMC {self.address}"

    def _sleep_backoff(self, attempt: int) -> None:
        delay = min(BACKOFF_MAX, BACKOFF_BASE * (2 ** attempt))
        time.sleep(delay * (0.5 + random.random() / 2))

    def _transport_error(self, exc: BaseException, method: str, path: str) -> RedfishError:
        cause = exc.__cause__ or exc
        if isinstance(cause, requests.exceptions.SSLError):
            return RedfishTLSError(f"{self._name()}: TLS verification failed for {self.base_url}: {cause}",
                                   hint="pass the BMC CA with ca_bundle=, or insecure=True for a lab")
        if isinstance(cause, requests.exceptions.Timeout):
            return RedfishTimeoutError(f"{self._name()}: no answer to {method} {path} within {self.timeout:g}s",
                                       hint="check the BMC is up and not overloaded; retry later")
        return RedfishTimeoutError(f"{self._name()}: cannot reach {self.base_url} ({type(cause).__name__})",
                                   hint="check the address, port and the BMC network")

    def _call(self, method: str, path: str, *, body: Any = None, args: dict[str, Any] | None = None) -> _Reply:
        """One Redfish request with our retry policy; returns status, decoded body, headers."""
        last: RedfishError | None = None
        relogged = False
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep_backoff(attempt - 1)
            try:
                fn = getattr(self._client, method.lower())
                kwargs: dict[str, Any] = {"timeout": self.timeout}
                if args:
                    kwargs["args"] = args
                if body is not None:
                    kwargs["body"] = body
                resp = fn(path, **kwargs)
                if resp.status == 401 and self._session_auth and not relogged:
                    # the session timed out (BMCs drop idle ones after their SessionTimeout,
                    # e.g. while an OS installs) or was deleted: log in again, once
                    relogged = True
                    log.info("%s: session no longer valid; logging in again", self._name())
                    self._relogin()
                    resp = fn(path, **kwargs)
            except RetriesExhaustedError as exc:
                last = self._transport_error(exc, method, path)
                cause = exc.__cause__
                if isinstance(cause, requests.exceptions.SSLError):
                    raise last from None
                # a read timeout on a non-idempotent request may have been acted on: no retry
                if isinstance(cause, requests.exceptions.ReadTimeout) and method != "GET":
                    raise last from None
                continue
            status = resp.status
            if status >= 500:
                msg = _message(self._decode(resp, path, lenient=True))
                last = RedfishServerError(f"{self._name()}: {method} {path} answered HTTP {status}"
                                          + (f": {msg}" if msg else ""),
                                          hint="the BMC failed internally; retry later or reset the BMC")
                continue
            headers = {k.lower(): v for k, v in resp.getheaders()}
            return _Reply(status, self._decode(resp, path), headers)
        assert last is not None
        raise last

    def _decode(self, resp: Any, path: str, *, lenient: bool = False) -> Any:
        try:
            return resp.dict
        except JsonDecodingError:
            if lenient:
                return None
            size = len(resp.read or b"")
            raise ParseError(f"the body ({size} bytes) is not valid JSON; it may be truncated", path="$",
                             source=f"{self._name()} {path}",
                             hint="retry; if it persists the BMC firmware is faulty") from None

    def _check(self, reply: _Reply, method: str, path: str) -> _Reply:
        if reply.status in (401, 403):
            raise RedfishAuthError(f"{self._name()} refused our credentials for {method} {path} "
                                   f"(HTTP {reply.status})",
                                   hint="check the BMC user name and password in the credentials file")
        if reply.status == 404:
            raise RedfishNotFoundError(f"{self._name()}: {method} {path}: no such resource (HTTP 404)",
                                       hint="the BMC does not implement it")
        if reply.status >= 400:
            msg = _message(reply.doc)
            raise RedfishError(f"{self._name()}: {method} {path} failed with HTTP {reply.status}"
                               + (f": {msg}" if msg else ""),
                               hint="see the BMC's message; the request may not be supported by this BMC")
        return reply

    def get(self, path: str, args: dict[str, Any] | None = None) -> Any:
        """GET a resource and return its decoded JSON object."""
        reply = self._check(self._call("GET", path, args=args), "GET", path)
        if not isinstance(reply.doc, dict):
            raise ParseError("expected a JSON object", path="$", source=f"{self._name()} {path}")
        return reply.doc

    def _get_as(self, model, path: str):
        return parse(model, self.get(path), path)

    # --- session ------------------------------------------------------------------------
    def login(self) -> Bmc:
        last: RedfishError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep_backoff(attempt - 1)
            try:
                self._login_once()
                break
            except RetriesExhaustedError as exc:
                last = self._transport_error(exc, "GET", ROOT)
                if isinstance(exc.__cause__, requests.exceptions.SSLError):
                    raise last from None
            except ServerDownOrUnreachableError as exc:
                status = getattr(getattr(exc, "response", None), "status", None)
                if status is not None and status < 500 and status != 503:
                    raise RedfishRequestError(f"{self._name()}: the service root answered HTTP {status}",
                                              hint="check the BMC address and that Redfish is enabled") from None
                last = RedfishServerError(f"{self._name()}: the service root answered HTTP {status}",
                                          hint="the BMC's Redfish service is failing; retry later or reset the BMC")
            except JsonDecodingError:
                raise ParseError("the service root is not valid JSON; it may be truncated", path="$",
                                 source=f"{self._name()} {ROOT}", hint="check the BMC firmware") from None
        else:
            assert last is not None
            raise last
        if self._client.root_resp.status != 200:
            # some BMCs answer 401 on the service root until logged in: read it again now
            self.root = parse(ServiceRootDoc, self.get(ROOT), ROOT)
        else:
            try:
                self.root = parse(ServiceRootDoc, self._client.root_resp.dict, ROOT)
            except JsonDecodingError:
                raise ParseError("the service root is not valid JSON", path="$",
                                 source=f"{self._name()} {ROOT}") from None
        systems = self._members(self.root.Systems.odata_id, levels=self.system_levels)
        if not systems:
            raise RedfishError(f"{self._name()} lists no ComputerSystem", hint="check the BMC is fully booted")
        uri, doc = systems[0]
        system = parse(SystemDoc, doc, uri)
        self.system_uri = uri
        self._fresh_system = (doc, system)
        self.quirks = quirks_for(system.Manufacturer, system.Model, self._quirk_overrides)
        return self

    def _login_once(self) -> None:
        self._session_auth = False
        try:
            self._client.login(auth="session")
            self._session_auth = True
        except InvalidCredentialsError:
            raise RedfishAuthError(f"{self._name()} refused our credentials (HTTP 401)",
                                   hint="check the BMC user name and password in the credentials file") from None
        except SessionCreationError as exc:
            if "HTTP 403" in str(exc):
                raise RedfishAuthError(f"{self._name()} refused our credentials (HTTP 403)",
                                       hint="the account lacks the Login privilege") from None
            if re.search(r"HTTP 5\d\d", str(exc)):
                raise ServerDownOrUnreachableError(str(exc)) from None
            # no usable SessionService: fall back to Basic authentication on every request
            log.info("%s: session login failed (%s); using Basic authentication", self._name(),
                     str(exc).splitlines()[0])
            try:
                self._client.login(auth="basic")
            except InvalidCredentialsError:
                raise RedfishAuthError(f"{self._name()} refused our credentials (HTTP 401, Basic)",
                                       hint="check the BMC user name and password") from None
        self._logged_in = True

    def _relogin(self) -> None:
        """A new session on the same BMC (the old one is gone: nothing to log out)."""
        try:
            self._login_once()
        except (RetriesExhaustedError, ServerDownOrUnreachableError) as exc:
            raise self._transport_error(exc, "POST", "SessionService/Sessions") from None

    def close(self) -> None:
        if self._logged_in:
            self._logged_in = False
            try:
                self._client.logout()
            except Exception as exc:  # noqa: BLE001 - a failed logout only leaks a session that times out
                log.info("%s: logout failed: %s", self._name(), exc)
        else:
            self._client._session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- collections --------------------------------------------------------------------
    def _expand_features(self) -> dict[str, Any]:
        if not self.quirks.expand or self.root is None:
            return {}
        return (self.root.ProtocolFeaturesSupported or {}).get("ExpandQuery") or {}

    def _max_expand_levels(self) -> int:
        """The deepest ``$expand`` the service serves: 0 without expand, 1 without ``$levels``."""
        feats = self._expand_features()
        if not (feats.get("NoLinks") or feats.get("ExpandAll")):
            return 0
        return max(1, int(feats.get("MaxLevels") or 1)) if feats.get("Levels") else 1

    def _expand_args(self, levels: int = 1) -> dict[str, Any] | None:
        """``$expand`` query for ``levels`` of subordinate resources (capped), if the service supports it."""
        cap = self._max_expand_levels()
        if not cap or levels < 1:
            return None
        feats = self._expand_features()
        # "." leaves Links alone (smaller answers); "*" is the fallback where "." is not served
        op = "." if feats.get("NoLinks") else "*"
        return {"$expand": op + (f"($levels={min(levels, cap)})" if feats.get("Levels") else "")}

    def _members(self, uri: str, levels: int = 1, doc: dict[str, Any] | None = None
                 ) -> list[tuple[str, dict[str, Any]]]:
        """(uri, document) of every member of a collection.

        ``levels`` asks the service to inline that many levels (members, then their
        subordinate collections...); ``doc`` is the collection when it already came back
        inlined in its parent. Members that come back as bare references are fetched.
        """
        out: list[tuple[str, dict[str, Any]]] = []
        page: str | None = uri
        while page:
            coll_doc = doc if doc is not None else self.get(page, self._expand_args(levels))
            doc = None
            coll = parse(CollectionDoc, coll_doc, page)
            for i, member in enumerate(coll.Members):
                mid = member.get("@odata.id")
                if not isinstance(mid, str):
                    raise ParseError("member has no @odata.id", path=f"$.Members[{i}]['@odata.id']", source=page)
                out.append((mid, member if _is_expanded(member) else self.get(mid, self._expand_args(levels - 1))))
            page = coll_doc.get("Members@odata.nextLink")
        return out

    def _members_or_none(self, ref: str | dict[str, Any], inv: Inventory, levels: int = 1
                         ) -> list[tuple[str, dict[str, Any]]]:
        """Members of a collection the BMC links to but may not serve (404 is noted, not fatal).

        ``ref`` is the collection's URI, or its reference as found in the parent document
        (possibly already expanded).
        """
        if isinstance(ref, dict):
            uri = ref.get("@odata.id", "")
            doc = ref if _is_expanded(ref) else None
        else:
            uri, doc = ref, None
        try:
            return self._members(uri, levels, doc)
        except RedfishNotFoundError:
            inv.unavailable.append(uri)
            return []

    # --- inventory ----------------------------------------------------------------------
    def system(self) -> SystemDoc:
        return self._get_as(SystemDoc, self.system_uri)

    def inventory(self) -> Inventory:
        fresh, self._fresh_system = self._fresh_system, None
        if fresh is None:
            raw = self.get(self.system_uri)
            fresh = (raw, parse(SystemDoc, raw, self.system_uri))
        raw, sysdoc = fresh
        inv = Inventory(address=self.address, system=SystemInfo(
            id=sysdoc.Id, manufacturer=sysdoc.Manufacturer, model=sysdoc.Model, serial=sysdoc.SerialNumber,
            sku=sysdoc.SKU, uuid=sysdoc.UUID, bios_version=sysdoc.BiosVersion, power_state=sysdoc.PowerState))
        if sysdoc.Processors:
            for uri, doc in self._members_or_none(raw["Processors"], inv):
                if (doc.get("Status") or {}).get("State") == "Absent":
                    continue
                p = parse(ProcessorDoc, doc, uri)
                if (p.ProcessorType or "").upper() == "GPU":
                    mem = p.MemorySummary.TotalMemorySizeMiB if p.MemorySummary else None
                    if mem is None and p.ProcessorMemory:
                        mem = sum(int(m.get("CapacityMiB") or 0) for m in p.ProcessorMemory) or None
                    inv.gpus.append(Gpu(id=p.Id, model=p.Model, manufacturer=p.Manufacturer, serial=p.SerialNumber,
                                        uuid=p.UUID, memory_mib=mem,
                                        ecc_enabled=p.MemorySummary.ECCModeEnabled if p.MemorySummary else None,
                                        health=p.Status.Health if p.Status else None))
                elif (p.ProcessorType or "CPU").upper() == "CPU":
                    inv.cpus.append(Cpu(id=p.Id, model=p.Model, cores=p.TotalCores))
        if sysdoc.Memory:
            for uri, doc in self._members_or_none(raw["Memory"], inv):
                if (doc.get("Status") or {}).get("State") == "Absent":
                    continue
                m = parse(MemoryDoc, doc, uri)
                inv.memory.append(Dimm(id=m.Id, capacity_mib=m.CapacityMiB, ecc=m.ErrorCorrection))
        if sysdoc.EthernetInterfaces:
            self._add_interfaces(inv, raw["EthernetInterfaces"], "system")
        if self.root and self.root.Managers:
            for uri, doc in self._members_or_none(self.root.Managers.odata_id, inv, levels=3):
                mgr = parse(ManagerDoc, doc, uri)
                if mgr.EthernetInterfaces:
                    self._add_interfaces(inv, doc["EthernetInterfaces"], "manager")
        if self.root and self.root.Chassis:
            # chassis -> NetworkAdapters -> adapter -> Ports -> port is five levels: in one request
            # where the BMC expands that deep, else the adapters are read per chassis below
            deep = self._max_expand_levels() >= 5
            for uri, doc in self._members_or_none(self.root.Chassis.odata_id, inv, levels=5 if deep else 1):
                chassis = parse(ChassisDoc, doc, uri)
                if chassis.NetworkAdapters:
                    self._add_adapter_ports(inv, doc["NetworkAdapters"])
                if chassis.PCIeDevices and not inv.gpus:
                    self._add_pcie_gpus(inv, doc["PCIeDevices"])
        if self.root and self.root.UpdateService:
            try:
                upd = self.get(self.root.UpdateService.odata_id, self._expand_args(2))
            except RedfishNotFoundError:
                upd = {}
                inv.unavailable.append(self.root.UpdateService.odata_id)
            fw = upd.get("FirmwareInventory")
            if isinstance(fw, dict) and "@odata.id" in fw:
                for uri, doc in self._members_or_none(fw, inv):
                    s = parse(SoftwareDoc, doc, uri)
                    inv.firmware.append((s.Name or s.Id, s.Version or ""))
        if sysdoc.Bios:
            bios_uri = sysdoc.Bios.odata_id
            try:
                bios_doc = raw["Bios"] if _is_expanded(raw["Bios"]) else self.get(bios_uri)
                inv.bios = parse(BiosDoc, bios_doc, bios_uri).Attributes
            except RedfishNotFoundError:
                inv.unavailable.append(bios_uri)
        return inv

    def _add_interfaces(self, inv: Inventory, coll: str | dict[str, Any], owner: str) -> None:
        seen = inv.nic_by_mac()
        for uri, doc in self._members_or_none(coll, inv):
            if (doc.get("Status") or {}).get("State") == "Absent":
                continue
            e = parse(EthernetInterfaceDoc, doc, uri)
            if e.MACAddress in seen:
                continue
            nic = Nic(id=e.Id, mac=e.MACAddress, link=e.LinkStatus, speed_mbps=e.SpeedMbps, owner=owner, uri=uri)
            inv.nics.append(nic)
            seen[nic.mac] = nic

    def _add_adapter_ports(self, inv: Inventory, coll: str | dict[str, Any]) -> None:
        seen = inv.nic_by_mac()
        # adapters, their Ports collections and the ports themselves in one request if possible
        for uri, doc in self._members_or_none(coll, inv, levels=3):
            adapter = parse(NetworkAdapterDoc, doc, uri)
            if not (adapter.Ports or adapter.NetworkPorts):
                continue
            ports_ref = doc["Ports"] if adapter.Ports else doc["NetworkPorts"]
            for puri, pdoc in self._members_or_none(ports_ref, inv):
                port = parse(PortDoc, pdoc, puri)
                macs = (port.Ethernet.AssociatedMACAddresses if port.Ethernet else None) \
                    or port.AssociatedNetworkAddresses or []
                for j, raw in enumerate(macs):
                    try:
                        mac = normalise_mac(raw)
                    except ValueError:
                        raise ParseError(f"{raw!r} is not a MAC address", path=f"$.Ethernet.AssociatedMACAddresses[{j}]",
                                         source=puri) from None
                    speed = int(port.CurrentSpeedGbps * 1000) if port.CurrentSpeedGbps is not None else None
                    if mac in seen:   # the host already reported it: keep its id, fill the gaps
                        nic = seen[mac]
                        nic.link = nic.link or port.LinkStatus
                        nic.speed_mbps = nic.speed_mbps or speed
                        continue
                    nic = Nic(id=f"{adapter.Id}/{port.Id}", mac=mac, link=port.LinkStatus, speed_mbps=speed,
                              owner="adapter", uri=puri)
                    inv.nics.append(nic)
                    seen[mac] = nic

    def _add_pcie_gpus(self, inv: Inventory, coll: str | dict[str, Any]) -> None:
        pattern = re.compile(self.quirks.gpu_pcie_manufacturer)
        for uri, doc in self._members_or_none(coll, inv):
            d = parse(PCIeDeviceDoc, doc, uri)
            if d.Manufacturer and pattern.search(d.Manufacturer):
                inv.gpus.append(Gpu(id=d.Id, model=d.Model or d.Name, manufacturer=d.Manufacturer,
                                    serial=d.SerialNumber, health=d.Status.Health if d.Status else None,
                                    source="PCIeDevices"))

    # --- actions ------------------------------------------------------------------------
    def _wait_task(self, reply: _Reply, what: str, timeout: float) -> None:
        """Follow a 202 task monitor until the action ends."""
        monitor = reply.headers.get("location")
        if not monitor:
            return
        deadline = time.monotonic() + timeout
        while True:
            r = self._call("GET", monitor)
            if r.status != 202:
                self._check(r, "GET", monitor)
                state = (r.doc or {}).get("TaskState") if isinstance(r.doc, dict) else None
                if state in {"Exception", "Killed", "Cancelled"}:
                    raise RedfishError(f"{self._name()}: {what} ended in task state {state}: {_message(r.doc)}")
                return
            if time.monotonic() > deadline:
                raise RedfishTimeoutError(f"{self._name()}: {what} still running after {timeout:g}s",
                                          hint=f"see the task at {monitor}")
            try:
                retry_after = float(r.headers.get("retry-after", "1"))
            except ValueError:
                retry_after = 1.0
            time.sleep(min(max(retry_after, 0.1), 2.0) if retry_after else 0.2)

    def _action(self, path: str, body: dict[str, Any], what: str, timeout: float = 120.0) -> _Reply:
        reply = self._check(self._call("POST", path, body=body), "POST", path)
        if reply.status == 202:
            self._wait_task(reply, what, timeout)
        return reply

    def power(self, action: str, wait: bool = True, timeout: float = 120.0) -> str:
        """Reset the system (On, ForceOff, GracefulShutdown, ForceRestart...); returns the PowerState."""
        sysdoc = self.system()
        if action in {"On", "ForceOn"} and sysdoc.PowerState == "On":
            return "On"
        target = ((sysdoc.Actions or {}).get("#ComputerSystem.Reset") or {}).get("target")
        if not target:
            raise RedfishError(f"{self._name()}: the system has no ComputerSystem.Reset action")
        self._action(target, {"ResetType": action}, f"reset {action}", timeout)
        if not wait or action not in POWER_TARGET:
            return self.system().PowerState
        want = POWER_TARGET[action]
        deadline = time.monotonic() + timeout
        while True:
            state = self.system().PowerState
            if state == want:
                return state
            if time.monotonic() > deadline:
                raise RedfishTimeoutError(f"{self._name()}: PowerState is {state}, not {want}, "
                                          f"{timeout:g}s after {action}", hint="check the system's power")
            time.sleep(0.2)

    def set_boot_once(self, target: str) -> None:
        """Boot from ``target`` (Cd, Pxe, Hdd...) on the next boot only."""
        sysdoc = self.get(self.system_uri)
        allowed = (sysdoc.get("Boot") or {}).get("BootSourceOverrideTarget@Redfish.AllowableValues")
        if allowed and target not in allowed:
            raise ConfigError(f"{self._name()}: boot target {target!r} is not one of {', '.join(allowed)}")
        boot: dict[str, Any] = {"BootSourceOverrideTarget": target, "BootSourceOverrideEnabled": "Once"}
        if self.quirks.boot_override_mode:
            boot["BootSourceOverrideMode"] = self.quirks.boot_override_mode
        self._check(self._call("PATCH", self.system_uri, body={"Boot": boot}), "PATCH", self.system_uri)
        got = self.system().Boot
        enabled_ok = {"Once", "Continuous"} if self.quirks.boot_once_may_read_continuous else {"Once"}
        if got is not None and got.BootSourceOverrideEnabled == "Continuous" and "Continuous" in enabled_ok:
            log.warning("%s: boot override to %s reads Continuous (known quirk); clear it after the install",
                        self._name(), target)
        if got is None or got.BootSourceOverrideTarget != target or got.BootSourceOverrideEnabled not in enabled_ok:
            raise RedfishError(f"{self._name()}: boot override to {target} did not stick "
                               f"(reads {got.BootSourceOverrideTarget if got else None}/"
                               f"{got.BootSourceOverrideEnabled if got else None})")

    def clear_boot_override(self) -> None:
        """Boot normally again (for BMCs whose one-time override does not clear itself)."""
        boot: dict[str, Any] = {"BootSourceOverrideEnabled": "Disabled"}
        if self.quirks.boot_override_mode:
            boot["BootSourceOverrideMode"] = self.quirks.boot_override_mode
        self._check(self._call("PATCH", self.system_uri, body={"Boot": boot}), "PATCH", self.system_uri)

    def _cd_media(self) -> tuple[str, VirtualMediaDoc]:
        colls: list[str] = []
        sysdoc = self.system()
        if sysdoc.VirtualMedia:
            colls.append(sysdoc.VirtualMedia.odata_id)
        elif self.root and self.root.Managers:
            for uri, doc in self._members(self.root.Managers.odata_id):
                vm = parse(ManagerDoc, doc, uri).VirtualMedia
                if vm:
                    colls.append(vm.odata_id)
        for coll in colls:
            for uri, doc in self._members(coll):
                media = parse(VirtualMediaDoc, doc, uri)
                if {"CD", "DVD"} & set(media.MediaTypes or []):
                    return uri, media
        raise RedfishError(f"{self._name()} has no virtual CD/DVD drive", hint="check the BMC license/features")

    def insert_media(self, image_url: str, timeout: float = 120.0) -> None:
        uri, media = self._cd_media()
        if media.Inserted and media.Image == image_url:
            return
        if media.Inserted:
            self.eject_media()
        target = ((media.Actions or {}).get("#VirtualMedia.InsertMedia") or {}).get("target")
        if not target:
            raise RedfishError(f"{self._name()}: {uri} has no InsertMedia action")
        self._action(target, {"Image": image_url, "Inserted": True, "WriteProtected": True}, "insert media", timeout)
        got = self._get_as(VirtualMediaDoc, uri)
        if not got.Inserted or got.Image != image_url:
            raise RedfishError(f"{self._name()}: virtual media reads Inserted={got.Inserted} Image={got.Image!r} "
                               f"after inserting {image_url}", hint="check the BMC can reach the image URL")

    def eject_media(self) -> None:
        uri, media = self._cd_media()
        if not media.Inserted:
            return
        target = ((media.Actions or {}).get("#VirtualMedia.EjectMedia") or {}).get("target")
        if not target:
            raise RedfishError(f"{self._name()}: {uri} has no EjectMedia action")
        self._action(target, {}, "eject media")

    def bios_attributes(self) -> dict[str, Any]:
        sysdoc = self.system()
        if not sysdoc.Bios:
            raise RedfishError(f"{self._name()}: the system exposes no Bios resource")
        return self._get_as(BiosDoc, sysdoc.Bios.odata_id).Attributes

    def apply_bios(self, wanted: dict[str, Any], reboot: bool = True, timeout: float = 300.0) -> BiosResult:
        """Stage ``wanted`` in the BIOS Settings resource, reset, and read back what took."""
        sysdoc = self.system()
        if not sysdoc.Bios:
            raise RedfishError(f"{self._name()}: the system exposes no Bios resource")
        bios_uri = sysdoc.Bios.odata_id
        bios = self._get_as(BiosDoc, bios_uri)
        unknown = sorted(set(wanted) - set(bios.Attributes))
        if unknown:
            raise ConfigError(f"{self._name()}: BIOS has no attribute(s) {', '.join(unknown)}",
                              hint="fix the SKU's bios profile to use this BIOS's attribute names")
        diff = {k: v for k, v in wanted.items() if bios.Attributes.get(k) != v}
        if not diff:
            return BiosResult(wanted=wanted, observed=bios.Attributes)
        settings = ((bios.settings or {}).get("SettingsObject") or {}).get("@odata.id") or bios_uri
        body: dict[str, Any] = {"Attributes": diff}
        if self.quirks.bios_apply_time:
            body["@Redfish.SettingsApplyTime"] = {"ApplyTime": "OnReset"}
        self._check(self._call("PATCH", settings, body=body), "PATCH", settings)
        rebooted = False
        if reboot:
            self.power("ForceRestart" if sysdoc.PowerState == "On" else "On", wait=True, timeout=timeout)
            rebooted = True
        observed = self._get_as(BiosDoc, bios_uri).Attributes
        not_applied = {k: (v, observed.get(k)) for k, v in wanted.items() if observed.get(k) != v}
        return BiosResult(wanted=wanted, observed=observed, not_applied=not_applied, rebooted=rebooted)


def connect(address: str, creds: Credentials, port: int = 443, ca_bundle: str | None = None,
            insecure: bool = False, timeout: float = 10.0, retries: int = 3,
            quirks: dict[str, Any] | None = None, for_inventory: bool = False) -> Bmc:
    """Log in to the BMC at ``address`` (or a full ``https://host:port`` URL) and return it.

    Use as a context manager so the session is logged out: ``with connect(...) as bmc:``.
    ``for_inventory`` reads the whole system subtree at login (one ``$expand`` request
    instead of five), for callers that go on to call ``inventory()``.
    """
    bmc = Bmc(address, creds, port=port, ca_bundle=ca_bundle, insecure=insecure, timeout=timeout,
              retries=retries, quirks=quirks, system_levels=3 if for_inventory else 1)
    try:
        return bmc.login()
    except BaseException:
        bmc.close()
        raise
