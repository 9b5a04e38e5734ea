"""The Redfish service of one simulated BMC, independent of HTTP transport.

``BmcService.handle(method, path, query, headers, body)`` returns a :class:`Reply`;
the server in :mod:`lab.bmcsim.server` only moves bytes. Resource documents follow the
DMTF schemas (checked by the DMTF Redfish Service Validator, ``bringup lab check redfish``).
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

from . import hardware
from .state import BOOT_TARGETS, RESET_TYPES, BmcState

R = "/redfish/v1"
SYS = f"{R}/Systems/1"
MGR = f"{R}/Managers/bmc"
CHA = f"{R}/Chassis/1"
#: a long action: mounting an image over the network takes a while on real BMCs
INSERT_MEDIA_SECONDS = 0.3
#: every versioned schema namespace the documents below use, for $metadata
SCHEMA_VERSIONS = [
    ("AccountService", "v1_15_0"), ("ActionInfo", "v1_4_0"), ("Bios", "v1_2_0"), ("Chassis", "v1_21_0"),
    ("ComputerSystem", "v1_20_0"), ("EthernetInterface", "v1_9_0"), ("Manager", "v1_19_0"),
    ("ManagerAccount", "v1_12_0"), ("Memory", "v1_17_0"), ("Message", "v1_2_0"), ("NetworkAdapter", "v1_9_0"),
    ("PCIeDevice", "v1_14_0"), ("Port", "v1_11_0"), ("Processor", "v1_20_0"), ("Role", "v1_3_2"),
    ("ServiceRoot", "v1_17_0"), ("Session", "v1_8_0"), ("SessionService", "v1_1_9"), ("Settings", "v1_4_0"),
    ("SoftwareInventory", "v1_10_0"), ("Task", "v1_7_0"), ("TaskService", "v1_2_0"),
    ("UpdateService", "v1_11_0"), ("VirtualMedia", "v1_6_0"),
]


#: deepest $expand served; 6 is what OpenBMC's bmcweb advertises (the most ServiceRoot allows)
MAX_EXPAND_LEVELS = 6
EXPAND_RE = re.compile(r"^[.*~](?:\(\$levels=(\d+)\))?$")


def expand_levels(query: str) -> int:
    """Levels asked for by ``$expand=.``/``*`` (``($levels=n)``), capped; 0 when none."""
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "$expand":
            m = EXPAND_RE.match(value)
            if m:
                return min(int(m.group(1) or 1), MAX_EXPAND_LEVELS)
    return 0


@dataclass
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def _ref(path: str) -> dict[str, str]:
    return {"@odata.id": path}


def _status(state: str = "Enabled", health: str = "OK") -> dict[str, str]:
    return {"State": state, "Health": health}


def _collection(path: str, odata_type: str, name: str, members: list[str]) -> dict[str, Any]:
    return {"@odata.id": path, "@odata.type": f"#{odata_type}Collection.{odata_type}Collection",
            "Name": name, "Members": [_ref(m) for m in members], "Members@odata.count": len(members)}


def error(status: int, message_id: str, message: str) -> Reply:
    return Reply(status, {"error": {"code": f"Base.1.18.{message_id}", "message": message,
                                    "@Message.ExtendedInfo": [{
                                        "@odata.type": "#Message.v1_2_0.Message",
                                        "MessageId": f"Base.1.18.{message_id}", "Message": message,
                                        "Severity": "Critical", "MessageSeverity": "Critical",
                                        "Resolution": "See the message."}]}})


class BmcService:
    """One BMC: resource tree + actions, with the node's Redfish faults applied."""

    def __init__(self, state: BmcState, username: str, password: str) -> None:
        self.state = state
        self.node = state.node
        self.sku = state.sku
        self._username = username
        self._password = password
        self.gpus = hardware.present_gpus(self.node, self.sku)
        self.macs = hardware.observed_macs(self.node, self.sku)
        self.nics = [f"cx{i}" for i in range(self.sku.nics.compute)]
        self.firmware = hardware.firmware(self.node, self.sku)

    # --- request entry ------------------------------------------------------------------
    def handle(self, method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Reply:
        if self.node.has_fault(FaultKind.BMC_500):
            return error(500, "InternalError", "The BMC web service failed (injected bmc_500).")
        path = path.rstrip("/") or "/"
        if path in (R, "/redfish"):
            path = R if path == R else "/redfish"
        for task in list(self.state.tasks.values()):
            self.state.task_finished(task)  # completes due long actions
        public = (method == "GET" and path in ("/redfish", R, f"{R}/odata", f"{R}/$metadata")) or (
            method == "POST" and path == f"{R}/SessionService/Sessions")
        if not public and not self._authorized(headers):
            return error(401, "NoValidSession", "No valid session or credentials; log in first.")
        if method == "GET":
            return self._get(path, query)
        if method == "POST":
            return self._post(path, self._json(body))
        if method == "PATCH":
            return self._patch(path, self._json(body))
        if method == "DELETE":
            return self._delete(path)
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
            return self._creds_ok(user, pw)
        return False

    def _creds_ok(self, user: str, password: str) -> bool:
        if self.node.has_fault(FaultKind.BMC_401):
            return False
        return secrets.compare_digest(user, self._username) and secrets.compare_digest(password, self._password)

    # --- GET ----------------------------------------------------------------------------
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
        levels = expand_levels(query)
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

    def resource(self, path: str) -> dict[str, Any] | None:
        """The document at ``path``, or None."""
        builder = self._routes().get(path)
        if builder is not None:
            return builder()
        parts = path[len(R) + 1:].split("/") if path.startswith(R + "/") else []
        return self._dynamic(parts)

    def _routes(self) -> dict[str, Any]:
        return {
            R: self.service_root,
            f"{R}/odata": self.odata,
            f"{R}/Systems": lambda: _collection(f"{R}/Systems", "ComputerSystem", "Computer Systems", [SYS]),
            SYS: self.system,
            f"{SYS}/ResetActionInfo": self.reset_action_info,
            f"{SYS}/Processors": lambda: _collection(
                f"{SYS}/Processors", "Processor", "Processors",
                [f"{SYS}/Processors/CPU{i}" for i in range(hardware.CPU_COUNT)]
                + [f"{SYS}/Processors/GPU{i}" for i in self.gpus]),
            f"{SYS}/Memory": lambda: _collection(
                f"{SYS}/Memory", "Memory", "Memory", [f"{SYS}/Memory/DIMM{i}" for i in range(hardware.DIMM_COUNT)]),
            f"{SYS}/EthernetInterfaces": lambda: _collection(
                f"{SYS}/EthernetInterfaces", "EthernetInterface", "Ethernet Interfaces",
                [f"{SYS}/EthernetInterfaces/{n}" for n in ["mgmt0", *self.nics]]),
            f"{SYS}/Bios": self.bios,
            f"{SYS}/Bios/Settings": self.bios_settings,
            f"{R}/Managers": lambda: _collection(f"{R}/Managers", "Manager", "Managers", [MGR]),
            MGR: self.manager,
            f"{MGR}/EthernetInterfaces": lambda: _collection(
                f"{MGR}/EthernetInterfaces", "EthernetInterface", "Manager Ethernet Interfaces",
                [f"{MGR}/EthernetInterfaces/bmc"]),
            f"{SYS}/VirtualMedia": lambda: _collection(
                f"{SYS}/VirtualMedia", "VirtualMedia", "Virtual Media", [f"{SYS}/VirtualMedia/Cd"]),
            f"{SYS}/VirtualMedia/Cd": self.virtual_media,
            f"{R}/Chassis": lambda: _collection(f"{R}/Chassis", "Chassis", "Chassis", [CHA]),
            CHA: self.chassis,
            f"{CHA}/PCIeDevices": lambda: _collection(
                f"{CHA}/PCIeDevices", "PCIeDevice", "PCIe Devices",
                [f"{CHA}/PCIeDevices/GPU{i}" for i in self.gpus]
                + [f"{CHA}/PCIeDevices/NIC{i}" for i in range(len(self.nics))]),
            f"{CHA}/NetworkAdapters": lambda: _collection(
                f"{CHA}/NetworkAdapters", "NetworkAdapter", "Network Adapters",
                [f"{CHA}/NetworkAdapters/NIC{i}" for i in range(len(self.nics))]),
            f"{R}/UpdateService": self.update_service,
            f"{R}/UpdateService/FirmwareInventory": lambda: _collection(
                f"{R}/UpdateService/FirmwareInventory", "SoftwareInventory", "Firmware Inventory",
                [f"{R}/UpdateService/FirmwareInventory/{k}" for k in self.firmware]),
            f"{R}/TaskService": self.task_service,
            f"{R}/TaskService/Tasks": lambda: _collection(
                f"{R}/TaskService/Tasks", "Task", "Tasks",
                [f"{R}/TaskService/Tasks/{t}" for t in sorted(self.state.tasks)]),
            f"{R}/SessionService": self.session_service,
            f"{R}/SessionService/Sessions": lambda: _collection(
                f"{R}/SessionService/Sessions", "Session", "Sessions",
                [f"{R}/SessionService/Sessions/{s}" for s in sorted(self.state.sessions)]),
            f"{R}/AccountService": self.account_service,
            f"{R}/AccountService/Accounts": lambda: _collection(
                f"{R}/AccountService/Accounts", "ManagerAccount", "Accounts", [f"{R}/AccountService/Accounts/1"]),
            f"{R}/AccountService/Accounts/1": self.account,
            f"{R}/AccountService/Roles": lambda: _collection(
                f"{R}/AccountService/Roles", "Role", "Roles", [f"{R}/AccountService/Roles/Administrator"]),
            f"{R}/AccountService/Roles/Administrator": self.role,
        }

    def _dynamic(self, parts: list[str]) -> dict[str, Any] | None:
        if len(parts) == 4 and parts[:3] == ["Systems", "1", "Processors"]:
            pid = parts[3]
            if pid.startswith("CPU") and pid[3:].isdigit() and int(pid[3:]) < hardware.CPU_COUNT:
                return self.cpu(int(pid[3:]))
            if pid.startswith("GPU") and pid[3:].isdigit() and int(pid[3:]) in self.gpus:
                return self.gpu(int(pid[3:]))
        if len(parts) == 4 and parts[:3] == ["Systems", "1", "Memory"]:
            d = parts[3]
            if d.startswith("DIMM") and d[4:].isdigit() and int(d[4:]) < hardware.DIMM_COUNT:
                return self.dimm(int(d[4:]))
        if len(parts) == 4 and parts[:3] == ["Systems", "1", "EthernetInterfaces"] and parts[3] in self.macs \
                and parts[3] != "bmc":
            return self.ethernet(f"{SYS}/EthernetInterfaces/{parts[3]}", parts[3])
        if parts == ["Managers", "bmc", "EthernetInterfaces", "bmc"]:
            return self.ethernet(f"{MGR}/EthernetInterfaces/bmc", "bmc")
        if len(parts) == 4 and parts[:3] == ["Chassis", "1", "PCIeDevices"]:
            d = parts[3]
            if d.startswith("GPU") and d[3:].isdigit() and int(d[3:]) in self.gpus:
                return self.pcie_gpu(int(d[3:]))
            if d.startswith("NIC") and d[3:].isdigit() and int(d[3:]) < len(self.nics):
                return self.pcie_nic(int(d[3:]))
        if len(parts) >= 4 and parts[:3] == ["Chassis", "1", "NetworkAdapters"]:
            a = parts[3]
            if a.startswith("NIC") and a[3:].isdigit() and int(a[3:]) < len(self.nics):
                i = int(a[3:])
                if len(parts) == 4:
                    return self.network_adapter(i)
                if parts[4:] == ["Ports"]:
                    base = f"{CHA}/NetworkAdapters/NIC{i}/Ports"
                    return _collection(base, "Port", "Ports", [f"{base}/1"])
                if parts[4:] == ["Ports", "1"]:
                    return self.port(i)
        if len(parts) == 3 and parts[:2] == ["UpdateService", "FirmwareInventory"] and parts[2] in self.firmware:
            return self.software(parts[2])
        if len(parts) == 3 and parts[:2] == ["TaskService", "Tasks"] and parts[2] in self.state.tasks:
            return self.task(parts[2])
        if len(parts) == 3 and parts[:2] == ["SessionService", "Sessions"] and parts[2] in self.state.sessions:
            return {"@odata.id": f"{R}/SessionService/Sessions/{parts[2]}", "@odata.type": "#Session.v1_8_0.Session",
                    "Id": parts[2], "Name": "User Session", "UserName": self._username}
        return None

    # --- documents ----------------------------------------------------------------------
    def service_root(self) -> dict[str, Any]:
        return {
            "@odata.id": f"{R}/", "@odata.type": "#ServiceRoot.v1_17_0.ServiceRoot",
            "Id": "RootService", "Name": "Root Service", "RedfishVersion": "1.20.0",
            "UUID": hardware.gpu_uuid(self.node, 999), "Vendor": "bringup-lab", "Product": "bmcsim",
            "ProtocolFeaturesSupported": {
                "ExpandQuery": {"ExpandAll": False, "Levels": True, "MaxLevels": MAX_EXPAND_LEVELS, "Links": False,
                                "NoLinks": True},
                "SelectQuery": False, "FilterQuery": False, "OnlyMemberQuery": False, "ExcerptQuery": False},
            "Systems": _ref(f"{R}/Systems"), "Chassis": _ref(f"{R}/Chassis"), "Managers": _ref(f"{R}/Managers"),
            "UpdateService": _ref(f"{R}/UpdateService"), "Tasks": _ref(f"{R}/TaskService"),
            "SessionService": _ref(f"{R}/SessionService"), "AccountService": _ref(f"{R}/AccountService"),
            "Links": {"Sessions": _ref(f"{R}/SessionService/Sessions")},
        }

    def odata(self) -> dict[str, Any]:
        names = ["Systems", "Chassis", "Managers", "UpdateService", "TaskService", "SessionService",
                 "AccountService"]
        return {"@odata.context": f"{R}/$metadata",
                "value": [{"name": n, "kind": "Singleton", "url": f"{R}/{n}"} for n in names]}

    def metadata(self) -> str:
        """A CSDL service document referencing every schema namespace this BMC uses."""
        used = SCHEMA_VERSIONS
        names = sorted({n for n, _ in used} | {"Resource", "Message", "Settings", "ComputerSystemCollection",
                                               "ProcessorCollection", "MemoryCollection",
                                               "EthernetInterfaceCollection", "ManagerCollection",
                                               "VirtualMediaCollection", "ChassisCollection",
                                               "PCIeDeviceCollection", "NetworkAdapterCollection", "PortCollection",
                                               "SoftwareInventoryCollection", "TaskCollection", "SessionCollection",
                                               "ManagerAccountCollection", "RoleCollection"})
        lines = ['<?xml version="1.0" encoding="UTF-8"?>',
                 '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">']
        for name in names:
            lines.append(f'  <edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/{name}_v1.xml">')
            lines.append(f'    <edmx:Include Namespace="{name}"/>')
            for n, v in used:
                if n == name:
                    lines.append(f'    <edmx:Include Namespace="{n}.{v}"/>')
            lines.append("  </edmx:Reference>")
        lines += ["  <edmx:DataServices>",
                  '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">',
                  '      <EntityContainer Name="Service" Extends="ServiceRoot.v1_17_0.ServiceContainer"/>',
                  "    </Schema>", "  </edmx:DataServices>", "</edmx:Edmx>"]
        return "\n".join(lines)

    def system(self) -> dict[str, Any]:
        st = self.state
        return {
            "@odata.id": SYS, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem", "Id": "1",
            "Name": self.node.name, "SystemType": "Physical", "Manufacturer": "Supermicro",
            "Model": f"SYS-821GE-TNHR ({self.sku.sku})", "SKU": self.sku.sku, "SerialNumber": self.node.serial,
            "UUID": hardware.gpu_uuid(self.node, 1000), "HostName": self.node.name,
            "PowerState": st.power_state(), "BiosVersion": self.firmware["BIOS"],
            "Status": _status(health="OK"),
            "Boot": {"BootSourceOverrideEnabled": st.boot_enabled, "BootSourceOverrideTarget": st.boot_target,
                     "BootSourceOverrideTarget@Redfish.AllowableValues": BOOT_TARGETS,
                     "BootSourceOverrideMode": st.boot_mode,
                     "BootSourceOverrideMode@Redfish.AllowableValues": ["Legacy", "UEFI"]},
            "ProcessorSummary": {"Count": hardware.CPU_COUNT, "Model": "Intel(R) Xeon(R) Platinum 8480+"},
            "MemorySummary": {"TotalSystemMemoryGiB": hardware.DIMM_COUNT * hardware.DIMM_MIB // 1024},
            "Processors": _ref(f"{SYS}/Processors"), "Memory": _ref(f"{SYS}/Memory"),
            "EthernetInterfaces": _ref(f"{SYS}/EthernetInterfaces"), "Bios": _ref(f"{SYS}/Bios"),
            "VirtualMedia": _ref(f"{SYS}/VirtualMedia"),
            "Links": {"Chassis": [_ref(CHA)], "ManagedBy": [_ref(MGR)]},
            "Actions": {"#ComputerSystem.Reset": {
                "target": f"{SYS}/Actions/ComputerSystem.Reset",
                "@Redfish.ActionInfo": f"{SYS}/ResetActionInfo"}},
        }

    def reset_action_info(self) -> dict[str, Any]:
        return {"@odata.id": f"{SYS}/ResetActionInfo", "@odata.type": "#ActionInfo.v1_4_0.ActionInfo",
                "Id": "ResetActionInfo", "Name": "Reset Action Info",
                "Parameters": [{"Name": "ResetType", "Required": True, "DataType": "String",
                                "AllowableValues": RESET_TYPES}]}

    def cpu(self, i: int) -> dict[str, Any]:
        return {"@odata.id": f"{SYS}/Processors/CPU{i}", "@odata.type": "#Processor.v1_20_0.Processor",
                "Id": f"CPU{i}", "Name": f"Processor {i}", "Socket": f"CPU{i}", "ProcessorType": "CPU",
                "ProcessorArchitecture": "x86", "InstructionSet": "x86-64", "Manufacturer": "Intel(R) Corporation",
                "Model": "Intel(R) Xeon(R) Platinum 8480+", "TotalCores": 56, "TotalThreads": 112,
                "MaxSpeedMHz": 3800, "Status": _status()}

    def gpu(self, i: int) -> dict[str, Any]:
        return {"@odata.id": f"{SYS}/Processors/GPU{i}", "@odata.type": "#Processor.v1_20_0.Processor",
                "Id": f"GPU{i}", "Name": f"GPU {i}", "Socket": f"SXM{i + 1}", "ProcessorType": "GPU",
                "Manufacturer": hardware.GPU_VENDOR, "Model": self.sku.gpu.model,
                "SerialNumber": hardware.gpu_serial(self.node, i), "UUID": hardware.gpu_uuid(self.node, i),
                "MemorySummary": {"TotalMemorySizeMiB": self.sku.gpu.memory_mib,
                                  "ECCModeEnabled": hardware.gpu_ecc_enabled(self.node)},
                "Status": _status()}

    def dimm(self, i: int) -> dict[str, Any]:
        return {"@odata.id": f"{SYS}/Memory/DIMM{i}", "@odata.type": "#Memory.v1_17_0.Memory",
                "Id": f"DIMM{i}", "Name": f"DIMM {i}", "MemoryDeviceType": "DDR5", "CapacityMiB": hardware.DIMM_MIB,
                "OperatingSpeedMhz": 4800, "ErrorCorrection": "MultiBitECC", "Manufacturer": "Samsung",
                "SerialNumber": f"{self.node.serial}-D{i:02d}", "Status": _status()}

    def ethernet(self, path: str, iface: str) -> dict[str, Any]:
        speed = self.sku.nics.compute_speed_gbps * 1000 if iface.startswith("cx") else 1000
        return {"@odata.id": path, "@odata.type": "#EthernetInterface.v1_9_0.EthernetInterface",
                "Id": iface, "Name": f"Interface {iface}", "MACAddress": self.macs[iface],
                "PermanentMACAddress": self.macs[iface], "SpeedMbps": speed, "LinkStatus": "LinkUp",
                "InterfaceEnabled": True, "Status": _status()}

    def bios(self) -> dict[str, Any]:
        return {"@odata.id": f"{SYS}/Bios", "@odata.type": "#Bios.v1_2_0.Bios", "Id": "Bios",
                "Name": "BIOS Configuration Current Settings", "AttributeRegistry": "BiosAttributeRegistry.v1_0_0",
                "Attributes": dict(self.state.bios),
                "@Redfish.Settings": {"@odata.type": "#Settings.v1_4_0.Settings",
                                      "SettingsObject": _ref(f"{SYS}/Bios/Settings"),
                                      "SupportedApplyTimes": ["OnReset"]}}

    def bios_settings(self) -> dict[str, Any]:
        return {"@odata.id": f"{SYS}/Bios/Settings", "@odata.type": "#Bios.v1_2_0.Bios", "Id": "Settings",
                "Name": "BIOS Configuration Pending Settings",
                "AttributeRegistry": "BiosAttributeRegistry.v1_0_0",
                "Attributes": dict(self.state.bios_pending)}

    def manager(self) -> dict[str, Any]:
        return {"@odata.id": MGR, "@odata.type": "#Manager.v1_19_0.Manager", "Id": "bmc", "Name": "BMC",
                "ManagerType": "BMC", "FirmwareVersion": self.firmware["BMC"], "Model": "AST2600",
                "UUID": hardware.gpu_uuid(self.node, 1001), "PowerState": "On", "Status": _status(),
                "EthernetInterfaces": _ref(f"{MGR}/EthernetInterfaces"),
                "Links": {"ManagerForServers": [_ref(SYS)], "ManagerForChassis": [_ref(CHA)]}}

    def virtual_media(self) -> dict[str, Any]:
        image = self.state.media_image
        base = f"{SYS}/VirtualMedia/Cd"
        return {"@odata.id": base, "@odata.type": "#VirtualMedia.v1_6_0.VirtualMedia", "Id": "Cd",
                "Name": "Virtual CD", "MediaTypes": ["CD", "DVD"], "Image": image,
                "ImageName": image.rsplit("/", 1)[-1] if image else None, "Inserted": image is not None,
                "WriteProtected": True, "ConnectedVia": "URI" if image else "NotConnected",
                "TransferProtocolType": "HTTPS" if image and image.startswith("https") else
                ("HTTP" if image else None),
                "Actions": {"#VirtualMedia.InsertMedia": {"target": f"{base}/Actions/VirtualMedia.InsertMedia"},
                            "#VirtualMedia.EjectMedia": {"target": f"{base}/Actions/VirtualMedia.EjectMedia"}}}

    def chassis(self) -> dict[str, Any]:
        return {"@odata.id": CHA, "@odata.type": "#Chassis.v1_21_0.Chassis", "Id": "1", "Name": "Chassis",
                "ChassisType": "RackMount", "Manufacturer": "Supermicro", "Model": "SYS-821GE-TNHR",
                "SerialNumber": self.node.serial, "Status": _status(),
                "PCIeDevices": _ref(f"{CHA}/PCIeDevices"), "NetworkAdapters": _ref(f"{CHA}/NetworkAdapters"),
                "Links": {"ComputerSystems": [_ref(SYS)], "ManagedBy": [_ref(MGR)]}}

    def _pcie(self, i: int, kind: str, name: str, maker: str, model: str, serial: str) -> dict[str, Any]:
        gen = f"Gen{self.sku.gpu.pcie_gen}"
        return {"@odata.id": f"{CHA}/PCIeDevices/{kind}{i}", "@odata.type": "#PCIeDevice.v1_14_0.PCIeDevice",
                "Id": f"{kind}{i}", "Name": name, "Manufacturer": maker, "Model": model, "SerialNumber": serial,
                "DeviceType": "SingleFunction",
                "PCIeInterface": {"PCIeType": gen, "MaxPCIeType": gen, "LanesInUse": self.sku.gpu.pcie_width,
                                  "MaxLanes": self.sku.gpu.pcie_width},
                "Status": _status()}

    def pcie_gpu(self, i: int) -> dict[str, Any]:
        return self._pcie(i, "GPU", f"GPU {i}", hardware.GPU_VENDOR, self.sku.gpu.model,
                          hardware.gpu_serial(self.node, i))

    def pcie_nic(self, i: int) -> dict[str, Any]:
        return self._pcie(i, "NIC", f"NIC {i}", hardware.NIC_VENDOR, self.sku.nics.compute_model,
                          f"MT{self.node.serial[2:]}{i}")

    def network_adapter(self, i: int) -> dict[str, Any]:
        base = f"{CHA}/NetworkAdapters/NIC{i}"
        return {"@odata.id": base, "@odata.type": "#NetworkAdapter.v1_9_0.NetworkAdapter", "Id": f"NIC{i}",
                "Name": f"Network Adapter {i}", "Manufacturer": hardware.NIC_VENDOR,
                "Model": self.sku.nics.compute_model, "SerialNumber": f"MT{self.node.serial[2:]}{i}",
                "Ports": _ref(f"{base}/Ports"), "Status": _status()}

    def port(self, i: int) -> dict[str, Any]:
        return {"@odata.id": f"{CHA}/NetworkAdapters/NIC{i}/Ports/1", "@odata.type": "#Port.v1_11_0.Port",
                "Id": "1", "Name": "Port 1", "PortId": "1", "PortProtocol": "Ethernet", "PortType": "BidirectionalPort",
                "LinkStatus": "LinkUp", "CurrentSpeedGbps": self.sku.nics.compute_speed_gbps,
                "Ethernet": {"AssociatedMACAddresses": [self.macs[f"cx{i}"]]}, "Status": _status()}

    def update_service(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/UpdateService", "@odata.type": "#UpdateService.v1_11_0.UpdateService",
                "Id": "UpdateService", "Name": "Update Service", "ServiceEnabled": True, "Status": _status(),
                "FirmwareInventory": _ref(f"{R}/UpdateService/FirmwareInventory")}

    def software(self, key: str) -> dict[str, Any]:
        return {"@odata.id": f"{R}/UpdateService/FirmwareInventory/{key}",
                "@odata.type": "#SoftwareInventory.v1_10_0.SoftwareInventory", "Id": key, "Name": key,
                "Version": self.firmware[key], "Updateable": key in {"BMC", "BIOS"}, "Status": _status()}

    def task_service(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/TaskService", "@odata.type": "#TaskService.v1_2_0.TaskService",
                "Id": "TaskService", "Name": "Task Service", "ServiceEnabled": True,
                "CompletedTaskOverWritePolicy": "Oldest", "LifeCycleEventOnTaskStateChange": False,
                "Status": _status(), "Tasks": _ref(f"{R}/TaskService/Tasks")}

    def task(self, tid: str) -> dict[str, Any]:
        t = self.state.tasks[tid]
        done = self.state.task_finished(t)
        return {"@odata.id": f"{R}/TaskService/Tasks/{tid}", "@odata.type": "#Task.v1_7_0.Task", "Id": tid,
                "Name": t.name, "TaskState": "Completed" if done else "Running",
                "TaskStatus": "OK", "PercentComplete": 100 if done else 50,
                "TaskMonitor": f"{R}/TaskService/TaskMonitors/{tid}"}

    def session_service(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/SessionService", "@odata.type": "#SessionService.v1_1_9.SessionService",
                "Id": "SessionService", "Name": "Session Service", "ServiceEnabled": True, "SessionTimeout": 1800,
                "Status": _status(), "Sessions": _ref(f"{R}/SessionService/Sessions")}

    def account_service(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/AccountService", "@odata.type": "#AccountService.v1_15_0.AccountService",
                "Id": "AccountService", "Name": "Account Service", "ServiceEnabled": True, "Status": _status(),
                "Accounts": _ref(f"{R}/AccountService/Accounts"), "Roles": _ref(f"{R}/AccountService/Roles")}

    def account(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/AccountService/Accounts/1", "@odata.type": "#ManagerAccount.v1_12_0.ManagerAccount",
                "Id": "1", "Name": "User Account", "UserName": self._username, "RoleId": "Administrator",
                "Enabled": True, "Locked": False, "Password": None, "AccountTypes": ["Redfish"],
                "Links": {"Role": _ref(f"{R}/AccountService/Roles/Administrator")}}

    def role(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/AccountService/Roles/Administrator", "@odata.type": "#Role.v1_3_2.Role",
                "Id": "Administrator", "Name": "Administrator", "RoleId": "Administrator", "IsPredefined": True,
                "AssignedPrivileges": ["Login", "ConfigureManager", "ConfigureUsers", "ConfigureSelf",
                                       "ConfigureComponents"]}

    # --- writes -------------------------------------------------------------------------
    def _post(self, path: str, body: Any) -> Reply:
        if not isinstance(body, dict):
            return error(400, "MalformedJSON", "The request body is not a JSON object.")
        st = self.state
        if path == f"{R}/SessionService/Sessions":
            if not self._creds_ok(str(body.get("UserName", "")), str(body.get("Password", ""))):
                return error(401, "NoValidSession", "The user name or password is not valid.")
            sid, token = st.new_session()
            loc = f"{R}/SessionService/Sessions/{sid}"
            doc = self.resource(loc)
            return Reply(201, doc, {"X-Auth-Token": token, "Location": loc})
        if path == f"{SYS}/Actions/ComputerSystem.Reset":
            rt = body.get("ResetType")
            if rt not in RESET_TYPES:
                return error(400, "ActionParameterNotSupported", f"ResetType {rt!r} is not one of {RESET_TYPES}.")
            st.reset(rt)
            return Reply(204)
        if path == f"{SYS}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia":
            image = body.get("Image")
            if not isinstance(image, str) or not image:
                return error(400, "ActionParameterMissing", "InsertMedia needs an Image URI.")
            if st.media_image is not None:
                return error(409, "ResourceInUse", "Media is already inserted; eject it first.")

            def mount() -> None:
                st.media_image = image
            task = st.start_task("Insert virtual media", INSERT_MEDIA_SECONDS, mount)
            monitor = f"{R}/TaskService/TaskMonitors/{task.id}"
            return Reply(202, self.task(task.id), {"Location": monitor, "Retry-After": "1"})
        if path == f"{SYS}/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia":
            st.media_image = None
            return Reply(204)
        return error(404, "ResourceNotFound", f"There is no action at {path}.")

    def task_monitor(self, tid: str) -> Reply:
        task = self.state.tasks.get(tid)
        if task is None:
            return error(404, "ResourceNotFound", f"There is no task {tid}.")
        if not self.state.task_finished(task):
            return Reply(202, self.task(tid), {"Location": f"{R}/TaskService/TaskMonitors/{tid}", "Retry-After": "1"})
        return Reply(204)

    def _patch(self, path: str, body: Any) -> Reply:
        if not isinstance(body, dict):
            return error(400, "MalformedJSON", "The request body is not a JSON object.")
        st = self.state
        if path == SYS:
            boot = body.get("Boot", {})
            target = boot.get("BootSourceOverrideTarget", st.boot_target)
            enabled = boot.get("BootSourceOverrideEnabled", st.boot_enabled)
            mode = boot.get("BootSourceOverrideMode", "Legacy")  # Supermicro: omitted -> Legacy
            if target not in BOOT_TARGETS or enabled not in {"Disabled", "Once", "Continuous"} \
                    or mode not in {"Legacy", "UEFI"}:
                return error(400, "PropertyValueNotInList", "Boot override target, enabled or mode is not allowed.")
            with st.lock:
                st.boot_target, st.boot_enabled = target, enabled
                if "Boot" in body:
                    st.boot_mode = mode
            return Reply(204)
        if path == f"{SYS}/Bios/Settings":
            attrs = body.get("Attributes")
            if not isinstance(attrs, dict):
                return error(400, "PropertyMissing", "PATCH the Settings resource with an Attributes object.")
            unknown = [a for a in attrs if a not in st.bios]
            if unknown:
                return error(400, "PropertyUnknown", f"Unknown BIOS attributes: {', '.join(unknown)}.")
            with st.lock:
                st.bios_pending.update(attrs)
            return Reply(204)
        if path == f"{SYS}/Bios":
            return error(405, "PropertyNotWritable", "Bios is read-only; PATCH its @Redfish.Settings object.")
        return error(405, "OperationNotAllowed", f"PATCH is not allowed on {path}.")

    def _delete(self, path: str) -> Reply:
        prefix = f"{R}/SessionService/Sessions/"
        if path.startswith(prefix):
            with self.state.lock:
                if self.state.sessions.pop(path[len(prefix):], None) is not None:
                    return Reply(204)
            return error(404, "ResourceNotFound", f"There is no session at {path}.")
        return error(405, "OperationNotAllowed", f"DELETE is not allowed on {path}.")

