"""Discover a fleet: read every BMC's inventory concurrently and verify it.

``discover`` runs one worker thread per BMC up to ``concurrency`` (BMC calls are I/O
bound: the threads mostly wait on slow BMCs). Every node yields a
:class:`NodeDiscovery`; a BMC that cannot be read is a critical finding, never a pass,
and one node's failure never stops the others. The error itself travels with the result
(:attr:`NodeDiscovery.failure`, never serialised), so the ``discover`` step re-raises it
as what it is: its class says whether to retry (a TLS error is ours, never a timeout).
"""

from __future__ import annotations

import logging
import stat
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from bringup.discovery.verify import ExpectedNode, Finding, verify
from bringup.errors import (
    AuthError,
    BringupError,
    ConfigError,
    ParseError,
    RedfishTimeoutError,
    RedfishTLSError,
    SecretFileError,
)
from bringup.redfish import Credentials, Inventory, connect

log = logging.getLogger(__name__)

ErrorKind = Literal["auth", "timeout", "tls", "parse", "config", "redfish", "internal"]


class NodeDiscovery(BaseModel):
    """What discovery found for one node; serialisable for a NetBox journal entry."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    bmc_address: str
    inventory: Inventory | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    #: the exception that ended the read (None when the BMC was read), for the caller to
    #: re-raise as it is; not part of the document
    failure: Exception | None = Field(default=None, exclude=True, repr=False)
    findings: list[Finding] = Field(default_factory=list)
    requests: int = 0
    seconds: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return self.inventory is not None and not any(f.severity in ("critical", "hold") for f in self.findings)

    @property
    def held(self) -> list[Finding]:
        """Findings that stop the node without blaming it (what a check needs could not be read)."""
        return [f for f in self.findings if f.severity == "hold"]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_markdown(self) -> str:
        """A short human report: verdict, then findings by severity, then the hardware."""
        verdict = "OK" if self.ok else ("HELD" if self.held and not any(
            f.severity == "critical" for f in self.findings) else "FAILED")
        lines = [f"### Discovery of {self.name} ({self.bmc_address}): {verdict}", ""]
        if self.error:
            lines += [f"**BMC error ({self.error_kind})**: {self.error}", ""]
        order = {"critical": 0, "hold": 1, "warning": 2, "info": 3}
        for f in sorted(self.findings, key=lambda f: order[f.severity]):
            if f.code == "firmware":
                continue
            lines.append(f"- **{f.severity}** `{f.code}`: {f.message}")
        inv = self.inventory
        if inv is not None:
            s = inv.system
            lines += ["", (f"- system: {s.manufacturer} {s.model}, serial {s.serial}, BIOS {s.bios_version}, "
                           f"power {s.power_state}"),
                      f"- GPUs: {len(inv.gpus)} x {', '.join(sorted({g.model or '?' for g in inv.gpus})) or '-'}",
                      f"- CPUs: {len(inv.cpus)}, memory {inv.memory_mib // 1024} GiB in {len(inv.memory)} DIMMs",
                      "- NICs: " + ", ".join(f"{n.id}={n.mac}" for n in inv.nics),
                      "- firmware: " + ", ".join(f"{n} {v}" for n, v in inv.firmware)]
        return "\n".join(lines) + "\n"


def _classify(exc: BaseException) -> ErrorKind:
    if isinstance(exc, AuthError):
        return "auth"
    if isinstance(exc, RedfishTimeoutError):
        return "timeout"
    if isinstance(exc, RedfishTLSError):
        return "tls"
    if isinstance(exc, ParseError):
        return "parse"
    if isinstance(exc, ConfigError):
        return "config"
    if isinstance(exc, BringupError):
        return "redfish"
    return "internal"


def discover_one(node: ExpectedNode, credentials_for: Callable[[str], Credentials], *, port: int = 443,
                 ca_bundle: str | None = None, insecure: bool = False, timeout: float = 10.0,
                 retries: int = 2, quirks: dict[str, Any] | None = None) -> NodeDiscovery:
    """Read and verify one node; never raises for a BMC problem."""
    started = time.monotonic()
    result = NodeDiscovery(name=node.name, bmc_address=node.bmc_address)
    bmc = None
    try:
        creds = credentials_for(node.bmc_address)
        with connect(node.bmc_address, creds, port=node.bmc_port or port, ca_bundle=ca_bundle,
                     insecure=insecure, timeout=timeout, retries=retries, quirks=quirks,
                     for_inventory=True) as bmc:
            result.inventory = bmc.inventory()
        result.requests = bmc.request_count   # after the logout, which is a request too
        result.findings = verify(node, result.inventory)
    except Exception as exc:  # one BMC's failure is that node's finding, never the fleet's crash
        kind = _classify(exc)
        if kind == "internal":
            log.exception("discovery of %s failed unexpectedly", node.name)
        result.inventory = None
        result.error = str(exc)
        result.error_kind = kind
        result.failure = exc
        result.findings = [Finding(severity="critical", code=f"bmc_{kind}",
                                   message=f"cannot read BMC {node.bmc_address}: {exc}",
                                   evidence={"bmc": node.bmc_address, "error": type(exc).__name__})]
        if bmc is not None:
            result.requests = bmc.request_count
    result.seconds = round(time.monotonic() - started, 3)
    return result


def discover(expected: list[ExpectedNode], credentials_for: Callable[[str], Credentials], *, port: int = 443,
             ca_bundle: str | None = None, insecure: bool = False, concurrency: int = 32, timeout: float = 10.0,
             retries: int = 2, quirks: dict[str, Any] | None = None) -> list[NodeDiscovery]:
    """Discover and verify every node, at most ``concurrency`` BMCs at a time; results in input order."""
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, not {concurrency}")

    def one(node: ExpectedNode) -> NodeDiscovery:
        return discover_one(node, credentials_for, port=port, ca_bundle=ca_bundle, insecure=insecure,
                            timeout=timeout, retries=retries, quirks=quirks)

    if not expected:
        return []
    with ThreadPoolExecutor(max_workers=min(concurrency, len(expected)), thread_name_prefix="discover") as pool:
        return list(pool.map(one, expected))


def read_password_file(path: str | Path) -> str:
    """The BMC password kept in ``path``, which must be mode 0600 (nobody else may read it)."""
    p = Path(path)
    try:
        mode = p.stat().st_mode
        text = p.read_text()
    except OSError as exc:
        raise SecretFileError(f"cannot read the password file {p}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretFileError(f"the password file {p} is mode {stat.S_IMODE(mode):04o}; it must be 0600",
                              hint=f"run `chmod 600 {p}`")
    password = text.rstrip("\r\n")
    if not password:
        raise SecretFileError(f"the password file {p} is empty")
    return password


def bmc_inventory(url: str, creds: Credentials, *, ca_bundle: str | None = None, insecure: bool = False,
                  timeout: float = 10.0, retries: int = 2) -> Inventory:
    """One BMC's typed inventory (what ``bringup bmc inventory`` prints). A member the BMC
    could not give is in ``unavailable``; auth, TLS and connection failures raise."""
    with connect(url, creds, ca_bundle=ca_bundle, insecure=insecure, timeout=timeout, retries=retries,
                 for_inventory=True) as bmc:
        return bmc.inventory()


def inventory_document(inv: Inventory) -> dict[str, Any]:
    """The JSON document of an inventory: system, gpus (and the serials several of them
    report), cpus, nics (name, mac), unavailable (where GPUs could not be read, it says so)."""
    return {"bmc": inv.address, "system": inv.system.model_dump(mode="json"), "systems": inv.systems,
            "gpus": [g.model_dump(mode="json", include={"id", "model", "serial", "serial_placeholder", "memory_mib",
                                                        "uuid", "health", "source", "uri"}) for g in inv.gpus],
            # GPUs are told apart by resource; serials several of them report are a finding
            "gpu_serials_identical": inv.identical_serials(),
            "cpus": [c.model_dump(mode="json") for c in inv.cpus],
            "nics": [{"name": n.id, "mac": n.mac, "owner": n.owner, "link": n.link, "speed_mbps": n.speed_mbps,
                      "position": list(n.position) if n.position else None, "uri": n.uri} for n in inv.nics],
            "memory_mib": inv.memory_mib, "firmware": dict(inv.firmware),
            "unavailable": [u.model_dump(mode="json") for u in inv.unavailable]}
