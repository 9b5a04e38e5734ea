"""The Redfish service of one simulated BMC, independent of HTTP transport.

``BmcService.handle(method, path, query, headers, body)`` returns a :class:`Reply`;
the server in :mod:`lab.bmcsim.server` only moves bytes. Where things are and how the
BMC behaves come from the node's vendor profile (:mod:`.profile`); documents follow the
DMTF schemas (checked by the DMTF Redfish Service Validator, ``bringup lab check
redfish``). Writes are in :mod:`.writes`.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from lab.fleet import FaultKind

from . import update, writes
from .common import R
from .state import BmcState
from .tree import Tree

#: every versioned schema namespace the documents use, for $metadata
SCHEMA_VERSIONS = [
    ("AccountService", "v1_15_0"), ("ActionInfo", "v1_4_0"), ("Bios", "v1_2_0"), ("Chassis", "v1_21_0"),
    ("ComputerSystem", "v1_20_0"), ("EthernetInterface", "v1_9_0"), ("LogEntry", "v1_15_0"),
    ("LogService", "v1_5_0"), ("Manager", "v1_19_0"), ("ManagerAccount", "v1_12_0"), ("Memory", "v1_17_0"),
    ("LeakDetection", "v1_1_0"), ("LeakDetector", "v1_3_0"), ("Message", "v1_2_0"), ("NetworkAdapter", "v1_9_0"), ("NetworkPort", "v1_4_1"), ("NetworkPort", "v1_2_5"),
    ("PCIeDevice", "v1_14_0"), ("PCIeFunction", "v1_5_0"), ("Port", "v1_11_0"), ("PowerSubsystem", "v1_1_0"),
    ("PowerSupply", "v1_5_0"), ("Processor", "v1_20_0"), ("Sensor", "v1_9_0"), ("ThermalSubsystem", "v1_3_0"),
    ("Role", "v1_3_2"), ("ServiceRoot", "v1_17_0"), ("Session", "v1_8_0"), ("SessionService", "v1_1_9"),
    ("Settings", "v1_4_0"), ("SoftwareInventory", "v1_10_0"), ("Task", "v1_7_0"), ("TaskService", "v1_2_0"),
    ("UpdateService", "v1_11_0"), ("VirtualMedia", "v1_6_0"),
]
COLLECTIONS = ["ComputerSystem", "Processor", "Memory", "EthernetInterface", "Manager", "VirtualMedia", "Chassis",
               "PCIeDevice", "PCIeFunction", "NetworkAdapter", "Port", "NetworkPort", "SoftwareInventory", "Task",
               "Session", "ManagerAccount", "Role", "LogService", "LogEntry", "Sensor", "PowerSupply", "LeakDetector"]
EXPAND_RE = re.compile(r"^[.*~](?:\(\$levels=(\d+)\))?$")


@dataclass
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def error(status: int, message_id: str, message: str) -> Reply:
    mid = message_id if "." in message_id else f"Base.1.18.{message_id}"
    return Reply(status, {"error": {"code": mid, "message": message,
                                    "@Message.ExtendedInfo": [{
                                        "@odata.type": "#Message.v1_2_0.Message", "MessageId": mid,
                                        "Message": message, "Severity": "Critical", "MessageSeverity": "Critical",
                                        "Resolution": "See the message."}]}})


def expand_levels(query: str, cap: int) -> int:
    """Levels asked for by ``$expand=.``/``*`` (``($levels=n)``), capped; 0 when none or unserved."""
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "$expand" and cap:
            m = EXPAND_RE.match(value)
            if m:
                return min(int(m.group(1) or 1), cap)
    return 0


class BmcService:
    """One BMC: resource tree + actions, with the node's Redfish faults and vendor quirks."""

    def __init__(self, state: BmcState, username: str, password: str) -> None:
        self.state = state
        self.node = state.node
        self.sku = state.sku
        self.profile = state.profile
        self._username = username
        self._password = password
        self.tree = Tree(state, username)

    # --- request entry ------------------------------------------------------------------
    def handle(self, method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Reply:
        if self.node.has_fault(FaultKind.BMC_500):
            return error(500, "InternalError", "The BMC web service failed (injected bmc_500).")
        path = path.rstrip("/") or "/"
        self.state.tick()
        public = (method == "GET" and path in ("/redfish", R, f"{R}/odata", f"{R}/$metadata")) or (
            method == "POST" and path == f"{R}/SessionService/Sessions")
        if not public and not self._authorized(headers):
            return error(401, "NoValidSession", "No valid session or credentials; log in first.")
        if method == "GET":
            return self._get(path, query)
        if method == "POST" and path == update.PUSH_URI:
            return update.multipart_push(self, headers, body)
        if method == "POST":
            return writes.post(self, path, self._json(body))
        if method == "PATCH":
            return writes.patch(self, path, self._json(body))
        if method == "DELETE":
            return writes.delete(self, path)
        return error(405, "OperationNotAllowed", f"{method} is not allowed on {path}.")

    def _json(self, body: bytes) -> Any:
        try:
            return json.loads(body or b"{}")
        except ValueError:
            return None

    def _authorized(self, headers: dict[str, str]) -> bool:
        if self.node.has_fault(FaultKind.BMC_401):
            return False
        token = headers.get("x-auth-token")
        if token:
            return self.state.token_valid(token)
        auth = headers.get("authorization", "")
        if auth.lower().startswith("basic "):
            try:
                user, _, pw = base64.b64decode(auth[6:]).decode().partition(":")
            except ValueError:
                return False
            return self.creds_ok(user, pw)
        return False

    def creds_ok(self, user: str, password: str) -> bool:
        if self.node.has_fault(FaultKind.BMC_401):
            return False
        return secrets.compare_digest(user, self._username) and secrets.compare_digest(password, self._password)

    # --- GET ----------------------------------------------------------------------------
    def resource(self, path: str) -> dict[str, Any] | None:
        return self.tree.resource(path)

    def _get(self, path: str, query: str) -> Reply:
        if path == "/redfish":
            return Reply(200, {"v1": f"{R}/"})
        if path == f"{R}/$metadata":
            return Reply(200, self.metadata(), {"Content-Type": "application/xml"})
        monitors = f"{R}/TaskService/TaskMonitors/"
        if path.startswith(monitors):
            return self.task_monitor(path[len(monitors):])
        doc = self.resource(path)
        if doc is None:
            return error(404, "ResourceNotFound", f"There is no resource at {path}.")
        levels = expand_levels(query, self.profile.service.expand_max_levels)
        if levels:
            doc = self._expand(doc, levels)
        return Reply(200, doc)

    def _expand(self, doc: dict[str, Any], levels: int) -> dict[str, Any]:
        """Inline subordinate references (not Links, not annotations) ``levels`` deep."""
        if levels <= 0:
            return doc
        out: dict[str, Any] = {}
        for key, value in doc.items():
            if key in ("Links", "Actions") or key.startswith("@"):
                out[key] = value
            elif key == "Members" and isinstance(value, list):
                out[key] = [self._expand_ref(m, levels) for m in value]
            elif isinstance(value, dict) and set(value) == {"@odata.id"}:
                out[key] = self._expand_ref(value, levels)
            else:
                out[key] = value
        return out

    def _expand_ref(self, ref: dict[str, Any], levels: int) -> dict[str, Any]:
        target = self.resource(ref.get("@odata.id", ""))
        return self._expand(target, levels - 1) if target is not None else ref

    def task_monitor(self, tid: str) -> Reply:
        task = self.state.tasks.get(tid)
        if task is None:
            return error(404, "ResourceNotFound", f"There is no task {tid}.")
        if not self.state.task_finished(task):
            return Reply(202, self.tree.task(tid), {"Location": f"{R}/TaskService/TaskMonitors/{tid}",
                                                    "Retry-After": "1"})
        return Reply(204)

    def metadata(self) -> str:
        """A CSDL service document referencing every schema namespace this BMC uses."""
        names = sorted({n for n, _ in SCHEMA_VERSIONS} | {"Resource", "Settings"}
                       | {f"{c}Collection" for c in COLLECTIONS})
        lines = ['<?xml version="1.0" encoding="UTF-8"?>',
                 '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">']
        for name in names:
            lines.append(f'  <edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/{name}_v1.xml">')
            lines.append(f'    <edmx:Include Namespace="{name}"/>')
            for n, v in SCHEMA_VERSIONS:
                if n == name:
                    lines.append(f'    <edmx:Include Namespace="{n}.{v}"/>')
            lines.append("  </edmx:Reference>")
        lines += ["  <edmx:DataServices>",
                  '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">',
                  '      <EntityContainer Name="Service" Extends="ServiceRoot.v1_17_0.ServiceContainer"/>',
                  "    </Schema>", "  </edmx:DataServices>", "</edmx:Edmx>"]
        return "\n".join(lines)
