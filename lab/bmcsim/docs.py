"""Documents of the system side of a simulated BMC: systems, processors, memory,
interfaces, BIOS, virtual media, logs. Shapes follow the DMTF schemas (the Service
Validator checks them) and the vendor samples named in each profile."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.fleet import FaultKind

from . import hardware
from .common import R, ref, status
from .state import BOOT_TARGETS, RESET_TYPES

if TYPE_CHECKING:
    from .tree import Tree

    _Base = Tree
else:
    _Base = object


class SystemDocs(_Base):
    def system(self) -> dict[str, Any]:
        st, p = self.state, self.profile
        boot: dict[str, Any] = {
            "BootSourceOverrideEnabled": st.boot_enabled, "BootSourceOverrideTarget": st.boot_target,
            "BootSourceOverrideTarget@Redfish.AllowableValues": BOOT_TARGETS,
            "BootSourceOverrideMode": st.boot_mode,
            "BootSourceOverrideMode@Redfish.AllowableValues": ["Legacy", "UEFI"]}
        doc: dict[str, Any] = {
            "@odata.id": self.sys, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem", "Id": p.system.id,
            "Name": self.node.name, "SystemType": "Physical", "Manufacturer": p.system.manufacturer,
            "Model": p.system.model.format(sku=self.sku.sku), "SKU": self.sku.sku, "SerialNumber": self.node.serial,
            "UUID": hardware.gpu_uuid(self.node, 1000), "HostName": self.node.name,
            "PowerState": st.power_state(), "BiosVersion": self.firmware["BIOS"], "Status": status(),
            "Boot": boot, "BootProgress": {"LastState": st.boot_progress()},
            "ProcessorSummary": {"Count": hardware.CPU_COUNT, "Model": "Intel(R) Xeon(R) Platinum 8480+"},
            "MemorySummary": {"TotalSystemMemoryGiB": hardware.DIMM_COUNT * hardware.DIMM_MIB // 1024},
            "Processors": ref(f"{self.sys}/Processors"), "Memory": ref(f"{self.sys}/Memory"),
            "EthernetInterfaces": ref(f"{self.sys}/EthernetInterfaces"), "Bios": ref(f"{self.sys}/Bios"),
            "LogServices": ref(f"{self.sys}/LogServices"),
            "Links": {"Chassis": [ref(self.cha)], "ManagedBy": [ref(self.mgr)]},
            "Actions": {"#ComputerSystem.Reset": {"target": f"{self.sys}/Actions/ComputerSystem.Reset",
                                                  "@Redfish.ActionInfo": f"{self.sys}/ResetActionInfo"}}}
        if p.system.virtual_media == "system":
            doc["VirtualMedia"] = ref(f"{self.sys}/VirtualMedia")
        if self.hpe_oem:
            doc["Oem"] = self.system_oem()
        if p.system.boot_override == "settings":
            doc["@Redfish.Settings"] = {"@odata.type": "#Settings.v1_4_0.Settings",
                                        "SettingsObject": ref(f"{self.sys}/{p.system.settings_object}"),
                                        "SupportedApplyTimes": ["OnReset"]}
        return doc

    def system_settings(self) -> dict[str, Any]:
        """The system's settings object: the Boot the next boot will use (AMI's ``SD``)."""
        st = self.state
        boot = {"BootSourceOverrideEnabled": st.boot_pending.get("BootSourceOverrideEnabled", st.boot_enabled),
                "BootSourceOverrideTarget": st.boot_pending.get("BootSourceOverrideTarget", st.boot_target),
                "BootSourceOverrideTarget@Redfish.AllowableValues": BOOT_TARGETS}
        sd = self.profile.system.settings_object
        return {"@odata.id": f"{self.sys}/{sd}", "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
                "Id": sd, "Name": "System settings applied at next boot", "Boot": boot}

    def baseboard_system(self) -> dict[str, Any]:
        bb = self.profile.gpus.baseboard_id
        return {"@odata.id": self.baseboard, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem", "Id": bb,
                "Name": "HGX Baseboard", "SystemType": "Physical", "Manufacturer": self.profile.gpus.manufacturer,
                "Model": f"HGX {self.sku.gpu.model} {self.sku.gpu.count}-GPU", "Status": status(),
                "Processors": ref(f"{self.baseboard}/Processors"),
                "Links": {"Chassis": [ref(u) for u in (self.gpu_chassis_uri(i) for i in self.gpus) if u]}}

    def reset_action_info(self) -> dict[str, Any]:
        return {"@odata.id": f"{self.sys}/ResetActionInfo", "@odata.type": "#ActionInfo.v1_4_0.ActionInfo",
                "Id": "ResetActionInfo", "Name": "Reset Action Info",
                "Parameters": [{"Name": "ResetType", "Required": True, "DataType": "String",
                                "AllowableValues": RESET_TYPES}]}

    def cpu(self, i: int) -> dict[str, Any]:
        return {"@odata.id": f"{self.sys}/Processors/CPU{i}", "@odata.type": "#Processor.v1_20_0.Processor",
                "Id": f"CPU{i}", "Name": f"Processor {i}", "Socket": f"CPU{i}", "ProcessorType": "CPU",
                "ProcessorArchitecture": "x86", "InstructionSet": "x86-64", "Manufacturer": "Intel(R) Corporation",
                "Model": "Intel(R) Xeon(R) Platinum 8480+", "TotalCores": 56, "TotalThreads": 112,
                "MaxSpeedMHz": 3800, "Status": status()}

    def gpu(self, i: int) -> dict[str, Any]:
        uri = self.gpu_uri(i)
        return {"@odata.id": uri, "@odata.type": "#Processor.v1_20_0.Processor",
                "Id": uri.rsplit("/", 1)[1], "Name": f"GPU {i}", "Socket": f"SXM{i + 1}", "ProcessorType": "GPU",
                "Manufacturer": self.profile.gpus.manufacturer, "Model": self.sku.gpu.model,
                "SerialNumber": self.bmc_gpu_serial(i), "UUID": hardware.gpu_uuid(self.node, i),
                "MemorySummary": {"TotalMemorySizeMiB": self.sku.gpu.memory_mib,
                                  "ECCModeEnabled": hardware.gpu_ecc_enabled(self.node)},
                "Status": status()}

    def dimm(self, i: int) -> dict[str, Any]:
        return {"@odata.id": f"{self.sys}/Memory/DIMM{i}", "@odata.type": "#Memory.v1_17_0.Memory",
                "Id": f"DIMM{i}", "Name": f"DIMM {i}", "MemoryDeviceType": "DDR5", "CapacityMiB": hardware.DIMM_MIB,
                "OperatingSpeedMhz": 4800, "ErrorCorrection": "MultiBitECC", "Manufacturer": "Samsung",
                "SerialNumber": f"{self.node.serial}-D{i:02d}", "Status": status()}

    def ethernet(self, path: str, iface: str) -> dict[str, Any]:
        speed = self.sku.nics.compute_speed_gbps * 1000 if iface.startswith("cx") else 1000
        mac: str = self.macs[iface]
        if any(f.iface == iface for f in self.node.faults_of(FaultKind.MAC_NOT_AVAILABLE)):
            mac = "Not Available"     # as HPE Cray EX BMCs report HSN NICs (fixtures/redfish/hpe-cray-hms)
        return {"@odata.id": path, "@odata.type": "#EthernetInterface.v1_9_0.EthernetInterface",
                "Id": path.rsplit("/", 1)[1], "Name": f"Interface {iface}", "MACAddress": mac,
                "PermanentMACAddress": mac, "SpeedMbps": speed, "LinkStatus": "LinkUp",
                "InterfaceEnabled": True, "Status": status()}

    def bios(self) -> dict[str, Any]:
        return {"@odata.id": f"{self.sys}/Bios", "@odata.type": "#Bios.v1_2_0.Bios", "Id": "Bios",
                "Name": "BIOS Configuration Current Settings", "AttributeRegistry": "BiosAttributeRegistry.v1_0_0",
                "Attributes": dict(self.state.bios),
                "@Redfish.Settings": {"@odata.type": "#Settings.v1_4_0.Settings",
                                      "SettingsObject": ref(f"{self.sys}/{self.profile.system.bios_settings}"),
                                      "SupportedApplyTimes": ["OnReset"]}}

    def bios_settings(self) -> dict[str, Any]:
        st = self.state
        attrs = {**st.bios, **st.bios_pending} if self.profile.bios.settings_holds_all else dict(st.bios_pending)
        path = f"{self.sys}/{self.profile.system.bios_settings}"
        return {"@odata.id": path, "@odata.type": "#Bios.v1_2_0.Bios", "Id": path.rsplit("/", 1)[1],
                "Name": "BIOS Configuration Pending Settings", "AttributeRegistry": "BiosAttributeRegistry.v1_0_0",
                "Attributes": attrs}

    def virtual_media(self) -> dict[str, Any]:
        return self._medium(self.vm, self.state.media_image, "Virtual CD", ["CD", "DVD"])

    def seed_media(self) -> dict[str, Any]:
        return self._medium(self.seed_vm, self.state.seed_image, "Virtual Removable Media",
                            list(self.profile.system.seed_media_types))

    def _medium(self, base: str, image: str | None, name: str, types: list[str]) -> dict[str, Any]:
        return {"@odata.id": base, "@odata.type": "#VirtualMedia.v1_6_0.VirtualMedia", "Id": base.rsplit("/", 1)[1],
                "Name": name, "MediaTypes": types, "Image": image,
                "ImageName": image.rsplit("/", 1)[-1] if image else None, "Inserted": image is not None,
                "WriteProtected": True, "ConnectedVia": "URI" if image else "NotConnected",
                "TransferProtocolType": "HTTPS" if image and image.startswith("https") else
                ("HTTP" if image else None),
                "Actions": {"#VirtualMedia.InsertMedia": {"target": f"{base}/Actions/VirtualMedia.InsertMedia"},
                            "#VirtualMedia.EjectMedia": {"target": f"{base}/Actions/VirtualMedia.EjectMedia"}}}

    def log_service(self) -> dict[str, Any]:
        path = f"{self.sys}/LogServices/EventLog"
        return {"@odata.id": path, "@odata.type": "#LogService.v1_5_0.LogService", "Id": "EventLog",
                "Name": "System Event Log", "ServiceEnabled": True, "LogEntryType": "Event",
                "OverWritePolicy": "WrapsWhenFull", "Status": status(), "Entries": ref(f"{path}/Entries")}

    def log_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        return {"@odata.id": f"{self.sys}/LogServices/EventLog/Entries/{entry['Id']}",
                "@odata.type": "#LogEntry.v1_15_0.LogEntry", "Name": "Log Entry", **entry}

    def task(self, tid: str) -> dict[str, Any]:
        t = self.state.tasks[tid]
        state = self.state.task_state(t)
        done = state in ("Completed", "Exception")
        doc = {"@odata.id": f"{R}/TaskService/Tasks/{tid}", "@odata.type": "#Task.v1_7_0.Task", "Id": tid,
               "Name": t.name, "TaskState": state, "TaskStatus": "Critical" if t.failure else "OK",
               "PercentComplete": 100 if done else {"New": 0}.get(state, 50),
               "TaskMonitor": f"{R}/TaskService/TaskMonitors/{tid}"}
        if done and t.messages:
            doc["Messages"] = t.messages
        return doc
