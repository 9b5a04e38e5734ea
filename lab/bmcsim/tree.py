"""Where one simulated BMC puts each resource: URIs and the route table, from its profile.

:class:`Tree` knows the node, its faults and its vendor profile, and maps every URI to
the function that builds its document (:mod:`.docs`, :mod:`.chassis_docs`). The static
part of the table is built once; sessions, tasks, jobs and log entries change and are
looked up as they come.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lab.fleet import FaultKind

from . import hardware
from .chassis_docs import ChassisDocs
from .common import R, collection
from .docs import SystemDocs
from .health_docs import HealthDocs
from .oem_docs import OemDocs
from .state import BmcState


class Tree(SystemDocs, ChassisDocs, OemDocs, HealthDocs):
    """The resource tree of one BMC."""

    def __init__(self, state: BmcState, username: str) -> None:
        self.state = state
        self.node = state.node
        self.sku = state.sku
        self.profile = p = state.profile
        self.username = username
        self.gpus = hardware.present_gpus(self.node, self.sku)
        self.macs = hardware.observed_macs(self.node, self.sku)
        self.nics = list(range(self.sku.nics.compute))
        self.firmware = state.firmware   # the state's dict: updates show at once
        self.sys = f"{R}/Systems/{p.system.id}"
        self.mgr = f"{R}/Managers/{p.manager.id}"
        self.cha = f"{R}/Chassis/{p.chassis_id}"
        self.baseboard = f"{R}/Systems/{p.gpus.baseboard_id}" if p.gpus.placement == "baseboard" else None
        self.gpu_system = self.baseboard or self.sys
        self.missing = {f"iface:{f.iface}" for f in self.node.faults_of(FaultKind.MEMBER_404) if f.iface} | {
            f"gpu:{f.gpu}" for f in self.node.faults_of(FaultKind.MEMBER_404) if f.gpu is not None}
        self.routes: dict[str, Callable[[], dict[str, Any] | None]] = {}
        self._build()

    # --- names ------------------------------------------------------------------------------
    def gpu_name(self, template: str, i: int) -> str:
        return template.format(i=i, n=i + 1, slot=self.profile.gpus.first_slot + i)

    def nic_name(self, template: str, i: int) -> str:
        return template.format(i=i, n=i + 1, slot=self.profile.nics.first_slot + i)

    def nic_slot(self, i: int) -> int:
        return self.profile.nics.first_slot + i

    def iface_uri(self, iface: str) -> str:
        i = "mgmt0" if iface == "mgmt0" else int(iface[2:])
        name = self.profile.nics.mgmt_interface_id if i == "mgmt0" else \
            self.nic_name(self.profile.nics.system_interface_id, int(i))
        return f"{self.sys}/EthernetInterfaces/{name}"

    def bmc_gpu_serial(self, i: int) -> str:
        """The SerialNumber this BMC reports for GPU ``i`` (the profile says whose)."""
        g = self.profile.gpus
        return hardware.bmc_gpu_serial(self.node, i, g.serials, g.per_board, g.placeholder_serial)

    def gpu_uri(self, i: int) -> str:
        return f"{self.gpu_system}/Processors/{self.gpu_name(self.profile.gpus.processor_id, i)}"

    def adapter_uri(self, i: int) -> str:
        return f"{self.cha}/NetworkAdapters/{self.nic_name(self.profile.nics.adapter_id, i)}"

    def port_uri(self, i: int) -> str:
        kind = self.profile.nics.port_schema
        return f"{self.adapter_uri(i)}/{kind}/{self.nic_name(self.profile.nics.port_id, i)}"

    def pcie_gpu_uri(self, i: int) -> str:
        return f"{self.cha}/PCIeDevices/{self.gpu_name(self.profile.gpus.pcie_id, i)}"

    def pcie_nic_uri(self, i: int) -> str:
        return f"{self.cha}/PCIeDevices/{self.nic_name(self.profile.nics.adapter_id, i)}"

    def gpu_chassis_uri(self, i: int) -> str | None:
        tpl = self.profile.gpus.chassis_id
        return f"{R}/Chassis/{self.gpu_name(tpl, i)}" if tpl else None

    @property
    def fc_adapter(self) -> str | None:
        return f"{self.cha}/NetworkAdapters/FC.Slot.1" if self.node.has_fault(FaultKind.FC_PORT) else None

    @property
    def chipset(self) -> str | None:
        return f"{self.cha}/PCIeDevices/0-24" if self.node.has_fault(FaultKind.CHIPSET_FUNCTION) else None

    # --- the table --------------------------------------------------------------------------
    def _add(self, path: str, builder: Callable[[], dict[str, Any] | None]) -> None:
        self.routes[path] = builder

    def _coll(self, path: str, odata_type: str, name: str, members: list[str]) -> None:
        self._add(path, lambda: collection(path, odata_type, name, members))

    def _build(self) -> None:
        self._build_systems()
        self._build_chassis()
        self._build_services()
        self._build_health()

    def _build_systems(self) -> None:
        p, sys = self.profile, self.sys
        systems = [sys] + ([self.baseboard] if self.baseboard else [])
        self._coll(f"{R}/Systems", "ComputerSystem", "Computer Systems", systems)
        self._add(sys, self.system)
        self._add(f"{sys}/ResetActionInfo", self.reset_action_info)
        gpu_procs = [self.gpu_uri(i) for i in self.gpus] if p.gpus.placement in ("host", "baseboard") else []
        cpus = [f"{sys}/Processors/CPU{i}" for i in range(hardware.CPU_COUNT)]
        if self.baseboard:
            self._coll(f"{sys}/Processors", "Processor", "Processors", cpus)
            self._add(self.baseboard, self.baseboard_system)
            self._coll(f"{self.baseboard}/Processors", "Processor", "GPUs", gpu_procs)
        else:
            self._coll(f"{sys}/Processors", "Processor", "Processors", cpus + gpu_procs)
        for i in range(hardware.CPU_COUNT):
            self._add(f"{sys}/Processors/CPU{i}", lambda i=i: self.cpu(i))
        for i in self.gpus:
            if gpu_procs and f"gpu:{i}" not in self.missing:
                self._add(self.gpu_uri(i), lambda i=i: self.gpu(i))
        dimms = [f"{sys}/Memory/DIMM{i}" for i in range(hardware.DIMM_COUNT)]
        self._coll(f"{sys}/Memory", "Memory", "Memory", dimms)
        for i, d in enumerate(dimms):
            self._add(d, lambda i=i: self.dimm(i))
        ifaces = ["mgmt0"] + [f"cx{i}" for i in self.nics]
        self._coll(f"{sys}/EthernetInterfaces", "EthernetInterface", "Ethernet Interfaces",
                   [self.iface_uri(n) for n in ifaces])
        for n in ifaces:
            if f"iface:{n}" not in self.missing:
                self._add(self.iface_uri(n), lambda n=n: self.ethernet(self.iface_uri(n), n))
        self._add(f"{sys}/Bios", self.bios)
        self._add(f"{sys}/{p.system.bios_settings}", self.bios_settings)
        if p.system.boot_override == "settings":
            self._add(f"{sys}/{p.system.settings_object}", self.system_settings)
        vm = f"{self.sys if p.system.virtual_media == 'system' else self.mgr}/VirtualMedia"
        self.vm = f"{vm}/{p.system.virtual_media_id}"
        self.seed_vm = f"{vm}/{p.system.seed_media_id}"
        self._coll(vm, "VirtualMedia", "Virtual Media", [self.vm, self.seed_vm])
        self._add(self.vm, self.virtual_media)
        self._add(self.seed_vm, self.seed_media)
        sel = [self.sel_uri] if p.health.sel_owner == "system" else []
        self._coll(f"{sys}/LogServices", "LogService", "Log Services", [f"{sys}/LogServices/EventLog", *sel])
        self._add(f"{sys}/LogServices/EventLog", self.log_service)
        self._add(f"{sys}/LogServices/EventLog/Entries", lambda: collection(
            f"{sys}/LogServices/EventLog/Entries", "LogEntry", "Log Entries",
            [f"{sys}/LogServices/EventLog/Entries/{e['Id']}" for e in list(self.state.log_entries)]))

    def _build_chassis(self) -> None:
        cha = self.cha
        gpu_chassis = [u for u in (self.gpu_chassis_uri(i) for i in self.gpus) if u]
        self._coll(f"{R}/Chassis", "Chassis", "Chassis", [cha, *gpu_chassis])
        self._add(cha, self.chassis)
        for i in self.gpus:
            u = self.gpu_chassis_uri(i)
            if u:
                self._add(u, lambda i=i, u=u: self.gpu_chassis(i, u))
        # HPE's OEM-only layout lists no device in the standard collection: its own lists do
        listed = not self.hpe_oem
        devices = [self.pcie_gpu_uri(i) for i in self.gpus] + [self.pcie_nic_uri(i) for i in self.nics] \
            if listed else []
        devices += [self.chipset] if self.chipset else []
        self._coll(f"{cha}/PCIeDevices", "PCIeDevice", "PCIe Devices", devices)
        for i in self.gpus if listed else []:
            self._pcie(self.pcie_gpu_uri(i), lambda i=i: self.pcie_gpu(i), [("DisplayController", "0x10de")])
        for i in self.nics if listed else []:
            self._pcie(self.pcie_nic_uri(i), lambda i=i: self.pcie_nic(i), [("NetworkController", "0x15b3")])
        if self.hpe_oem:
            self.build_oem()
        if self.chipset:
            self._pcie(self.chipset, self.pcie_chipset, [("Bridge", "0x1022"), ("EncryptionController", "0x1022")])
        adapters = [self.adapter_uri(i) for i in self.nics] + ([self.fc_adapter] if self.fc_adapter else [])
        self._coll(f"{cha}/NetworkAdapters", "NetworkAdapter", "Network Adapters", adapters)
        kind = self.profile.nics.port_schema
        odata = "Port" if kind == "Ports" else "NetworkPort"
        for i in self.nics:
            self._add(self.adapter_uri(i), lambda i=i: self.network_adapter(i))
            self._coll(f"{self.adapter_uri(i)}/{kind}", odata, "Ports", [self.port_uri(i)])
            if f"iface:cx{i}" not in self.missing:
                self._add(self.port_uri(i), lambda i=i: self.port(i))
        if self.fc_adapter:
            port = f"{self.fc_adapter}/{kind}/FC.Slot.1-1"
            self._add(self.fc_adapter, self.fc_network_adapter)
            self._coll(f"{self.fc_adapter}/{kind}", odata, "Ports", [port])
            self._add(port, lambda: self.fc_port(port))

    def _pcie(self, uri: str, builder: Callable[[], dict[str, Any]], functions: list[tuple[str, str]]) -> None:
        self._add(uri, builder)
        members = [f"{uri}/PCIeFunctions/{n}" for n in range(len(functions))]
        self._coll(f"{uri}/PCIeFunctions", "PCIeFunction", "PCIe Functions", members)
        for n, (cls, vendor) in enumerate(functions):
            self._add(members[n], lambda n=n, cls=cls, vendor=vendor: self.pcie_function(uri, n, cls, vendor))

    def _build_services(self) -> None:
        mgr = self.mgr
        self._add(R, self.service_root)
        self._add(f"{R}/odata", self.odata)
        self._coll(f"{R}/Managers", "Manager", "Managers", [mgr])
        self._add(mgr, self.manager)
        self._coll(f"{mgr}/EthernetInterfaces", "EthernetInterface", "Manager Ethernet Interfaces",
                   [f"{mgr}/EthernetInterfaces/bmc"])
        self._add(f"{mgr}/EthernetInterfaces/bmc", lambda: self.ethernet(f"{mgr}/EthernetInterfaces/bmc", "bmc"))
        if self.profile.health.sel_owner == "manager":
            self._coll(f"{mgr}/LogServices", "LogService", "Log Services", [self.sel_uri])
        self._add(f"{R}/UpdateService", self.update_service)
        fw = f"{R}/UpdateService/FirmwareInventory"
        self._coll(fw, "SoftwareInventory", "Firmware Inventory", [f"{fw}/{k}" for k in self.firmware])
        for k in self.firmware:
            self._add(f"{fw}/{k}", lambda k=k: self.software(k))
        self._add(f"{R}/TaskService", self.task_service)
        self._add(f"{R}/TaskService/Tasks", lambda: collection(
            f"{R}/TaskService/Tasks", "Task", "Tasks", [f"{R}/TaskService/Tasks/{t}" for t in sorted(self.state.tasks)]))
        self._add(f"{R}/SessionService", self.session_service)
        self._add(f"{R}/SessionService/Sessions", lambda: collection(
            f"{R}/SessionService/Sessions", "Session", "Sessions",
            [f"{R}/SessionService/Sessions/{s}" for s in sorted(self.state.sessions)]))
        self._add(f"{R}/AccountService", self.account_service)
        self._coll(f"{R}/AccountService/Accounts", "ManagerAccount", "Accounts", [f"{R}/AccountService/Accounts/1"])
        self._add(f"{R}/AccountService/Accounts/1", self.account)
        self._coll(f"{R}/AccountService/Roles", "Role", "Roles", [f"{R}/AccountService/Roles/Administrator"])
        self._add(f"{R}/AccountService/Roles/Administrator", self.role)

    def resource(self, path: str) -> dict[str, Any] | None:
        """The document at ``path``, or None."""
        builder = self.routes.get(path)
        if builder is not None:
            return builder()
        head, _, leaf = path.rpartition("/")
        st = self.state
        if head == f"{R}/TaskService/Tasks" and leaf in st.tasks:
            return self.task(leaf)
        if head == f"{R}/SessionService/Sessions" and leaf in st.sessions:
            return {"@odata.id": path, "@odata.type": "#Session.v1_8_0.Session", "Id": leaf, "Name": "User Session",
                    "UserName": self.username}
        if head == f"{self.sel_uri}/Entries":
            return self.sel_entry_doc(leaf)
        if head == f"{self.sys}/LogServices/EventLog/Entries":
            entry = next((e for e in list(st.log_entries) if e["Id"] == leaf), None)
            return self.log_entry(entry) if entry else None
        job = next((j for j in st.jobs.values() if self.job_uri(j.id) == path), None)
        return self.job(job) if job else None

    def job_uri(self, jid: str) -> str:
        return self.profile.bios.job_uri.format(manager=self.profile.manager.id, n=jid.removeprefix("JID_"))
