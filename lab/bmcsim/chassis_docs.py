"""Documents of the chassis and service side of a simulated BMC: chassis, PCIe devices
and functions, network adapters and ports (``Port`` or Dell's deprecated
``NetworkPort``), manager, update, task, session and account services, Dell jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import hardware
from .common import R, ref, status

if TYPE_CHECKING:
    from .state import Job
    from .tree import Tree

    _Base = Tree
else:
    _Base = object


def _location(ordinal: int, label: str) -> dict[str, Any]:
    return {"PartLocation": {"LocationOrdinalValue": ordinal, "LocationType": "Slot", "ServiceLabel": label}}


class ChassisDocs(_Base):
    def service_root(self) -> dict[str, Any]:
        svc = self.profile.service
        levels = svc.expand_max_levels
        expand = {"ExpandAll": False, "Levels": bool(levels), "MaxLevels": max(levels, 1), "Links": False,
                  "NoLinks": bool(levels)}
        return {
            "@odata.id": f"{R}/", "@odata.type": "#ServiceRoot.v1_17_0.ServiceRoot",
            "Id": "RootService", "Name": "Root Service", "RedfishVersion": svc.redfish_version,
            "UUID": hardware.gpu_uuid(self.node, 999), "Vendor": svc.vendor, "Product": svc.product,
            "ProtocolFeaturesSupported": {"ExpandQuery": expand, "SelectQuery": False, "FilterQuery": False,
                                          "OnlyMemberQuery": False, "ExcerptQuery": False},
            "Systems": ref(f"{R}/Systems"), "Chassis": ref(f"{R}/Chassis"), "Managers": ref(f"{R}/Managers"),
            "UpdateService": ref(f"{R}/UpdateService"), "Tasks": ref(f"{R}/TaskService"),
            "SessionService": ref(f"{R}/SessionService"), "AccountService": ref(f"{R}/AccountService"),
            "Links": {"Sessions": ref(f"{R}/SessionService/Sessions")},
        }

    def odata(self) -> dict[str, Any]:
        names = ["Systems", "Chassis", "Managers", "UpdateService", "TaskService", "SessionService",
                 "AccountService"]
        return {"@odata.context": f"{R}/$metadata",
                "value": [{"name": n, "kind": "Singleton", "url": f"{R}/{n}"} for n in names]}

    def chassis(self) -> dict[str, Any]:
        p = self.profile
        doc = {"@odata.id": self.cha, "@odata.type": "#Chassis.v1_21_0.Chassis", "Id": p.chassis_id,
               "Name": "Chassis", "ChassisType": "RackMount", "Manufacturer": p.system.manufacturer,
               "Model": p.system.model.format(sku=self.sku.sku), "SerialNumber": self.node.serial,
               "Status": status(), "PCIeDevices": ref(f"{self.cha}/PCIeDevices"),
               "NetworkAdapters": ref(f"{self.cha}/NetworkAdapters"), "Sensors": ref(f"{self.cha}/Sensors"),
               "PowerSubsystem": ref(f"{self.cha}/PowerSubsystem"),
               "ThermalSubsystem": ref(f"{self.cha}/ThermalSubsystem"),
               "Links": {"ComputerSystems": [ref(self.sys)], "ManagedBy": [ref(self.mgr)]}}
        if self.hpe_oem:
            doc["Oem"] = self.chassis_oem()
        return doc

    def gpu_chassis(self, i: int, uri: str) -> dict[str, Any]:
        return {"@odata.id": uri, "@odata.type": "#Chassis.v1_21_0.Chassis", "Id": uri.rsplit("/", 1)[1],
                "Name": f"GPU SXM {i + 1}", "ChassisType": "Module", "Manufacturer": self.profile.gpus.manufacturer,
                "Model": self.sku.gpu.model, "SerialNumber": self.bmc_gpu_serial(i), "Status": status(),
                "Links": {"ComputerSystems": [ref(self.gpu_system)], "ContainedBy": ref(self.cha)}}

    def _pcie_doc(self, uri: str, name: str, maker: str, model: str, serial: str | None, slot: int | None,
              device_type: str = "SingleFunction") -> dict[str, Any]:
        gen = f"Gen{self.sku.gpu.pcie_gen}"
        doc = {"@odata.id": uri, "@odata.type": "#PCIeDevice.v1_14_0.PCIeDevice", "Id": uri.rsplit("/", 1)[1],
               "Name": name, "Manufacturer": maker, "Model": model, "SerialNumber": serial,
               "DeviceType": device_type, "PCIeFunctions": ref(f"{uri}/PCIeFunctions"),
               "PCIeInterface": {"PCIeType": gen, "MaxPCIeType": gen, "LanesInUse": self.sku.gpu.pcie_width,
                                 "MaxLanes": self.sku.gpu.pcie_width},
               "Status": status()}
        if slot is not None:
            doc["Slot"] = {"Location": _location(slot, f"PCIe Slot {slot}")}
        return doc

    def pcie_gpu(self, i: int) -> dict[str, Any]:
        return self._pcie_doc(self.pcie_gpu_uri(i), f"GPU {i}", self.profile.gpus.manufacturer, self.sku.gpu.model,
                          self.bmc_gpu_serial(i), self.profile.gpus.first_slot + i)

    def pcie_nic(self, i: int) -> dict[str, Any]:
        return self._pcie_doc(self.pcie_nic_uri(i), f"NIC {i}", hardware.NIC_VENDOR, self.sku.nics.compute_model,
                          f"MT{self.node.serial[2:]}{i}", self.nic_slot(i))

    def pcie_chipset(self) -> dict[str, Any]:
        """An AMD SoC's own PCIe functions, listed like a card (fault ``chipset_function``)."""
        assert self.chipset is not None
        doc = self._pcie_doc(self.chipset, "Starship/Matisse Reserved SPP", "Advanced Micro Devices, Inc. [AMD]",
                         "Onboard", None, None, device_type="MultiFunction")
        doc.pop("SerialNumber")
        return doc

    def pcie_function(self, device: str, n: int, device_class: str, vendor: str) -> dict[str, Any]:
        uri = f"{device}/PCIeFunctions/{n}"
        return {"@odata.id": uri, "@odata.type": "#PCIeFunction.v1_5_0.PCIeFunction", "Id": str(n),
                "Name": f"PCIe Function {n}", "FunctionId": n, "FunctionType": "Physical",
                "DeviceClass": device_class, "VendorId": vendor, "Status": status(),
                "Links": {"PCIeDevice": ref(device)}}

    def network_adapter(self, i: int) -> dict[str, Any]:
        base = self.adapter_uri(i)
        kind = self.profile.nics.port_schema
        doc = {"@odata.id": base, "@odata.type": "#NetworkAdapter.v1_9_0.NetworkAdapter", "Id": base.rsplit("/", 1)[1],
               "Name": f"Network Adapter {i}", "Manufacturer": hardware.NIC_VENDOR,
               "Model": self.sku.nics.compute_model, "SerialNumber": f"MT{self.node.serial[2:]}{i}",
               kind: ref(f"{base}/{kind}"), "Status": status()}
        if self.profile.nics.location:
            doc["Location"] = _location(self.nic_slot(i), f"PCIe Slot {self.nic_slot(i)}")
        return doc

    def port(self, i: int) -> dict[str, Any]:
        uri = self.port_uri(i)
        mac = self.macs[f"cx{i}"]
        if self.profile.nics.port_schema == "NetworkPorts":   # Dell: the deprecated schema
            return {"@odata.id": uri, "@odata.type": "#NetworkPort.v1_4_1.NetworkPort", "Id": uri.rsplit("/", 1)[1],
                    "Name": "Network Port View", "PhysicalPortNumber": "1", "ActiveLinkTechnology": "Ethernet",
                    "AssociatedNetworkAddresses": [mac.upper()], "LinkStatus": "Up",
                    "CurrentLinkSpeedMbps": self.sku.nics.compute_speed_gbps * 1000, "Status": status()}
        return {"@odata.id": uri, "@odata.type": "#Port.v1_11_0.Port", "Id": uri.rsplit("/", 1)[1],
                "Name": "Port 1", "PortId": "1", "PortProtocol": "Ethernet", "PortType": "BidirectionalPort",
                "LinkStatus": "LinkUp", "CurrentSpeedGbps": self.sku.nics.compute_speed_gbps,
                "Ethernet": {"AssociatedMACAddresses": [mac]}, "Status": status()}

    def fc_network_adapter(self) -> dict[str, Any]:
        base = self.fc_adapter
        assert base is not None
        kind = self.profile.nics.port_schema
        return {"@odata.id": base, "@odata.type": "#NetworkAdapter.v1_9_0.NetworkAdapter", "Id": "FC.Slot.1",
                "Name": "Fibre Channel Adapter", "Manufacturer": "Emulex Corporation", "Model": "LPe35002",
                kind: ref(f"{base}/{kind}"), "Status": status()}

    def fc_port(self, uri: str) -> dict[str, Any]:
        """An FC HBA port as iDRAC reports it (fixtures/redfish/dell-idrac-fc-iserver): a WWPN."""
        wwpn = hardware.fc_wwpn(self.node)
        if self.profile.nics.port_schema == "NetworkPorts":
            return {"@odata.id": uri, "@odata.type": "#NetworkPort.v1_2_5.NetworkPort", "Id": "FC.Slot.1-1",
                    "Name": "Network Port View", "PhysicalPortNumber": "1", "ActiveLinkTechnology": "FibreChannel",
                    "AssociatedNetworkAddresses": [wwpn], "LinkStatus": "Down", "Status": status()}
        return {"@odata.id": uri, "@odata.type": "#Port.v1_11_0.Port", "Id": "FC.Slot.1-1", "Name": "FC Port 1",
                "PortId": "1", "PortProtocol": "FC", "PortType": "BidirectionalPort", "LinkStatus": "LinkDown",
                "FibreChannel": {"AssociatedWorldWideNames": [wwpn]}, "Status": status()}

    def manager(self) -> dict[str, Any]:
        p = self.profile
        doc = {"@odata.id": self.mgr, "@odata.type": "#Manager.v1_19_0.Manager", "Id": p.manager.id, "Name": "BMC",
               "ManagerType": "BMC", "FirmwareVersion": self.firmware["BMC"], "Model": p.manager.model,
               "UUID": hardware.gpu_uuid(self.node, 1001), "PowerState": "On", "Status": status(),
               "EthernetInterfaces": ref(f"{self.mgr}/EthernetInterfaces"),
               "Links": {"ManagerForServers": [ref(self.sys)], "ManagerForChassis": [ref(self.cha)]}}
        if p.system.virtual_media == "manager":
            doc["VirtualMedia"] = ref(f"{self.mgr}/VirtualMedia")
        if p.health.sel_owner == "manager":
            doc["LogServices"] = ref(f"{self.mgr}/LogServices")
        return doc

    def update_service(self) -> dict[str, Any]:
        """Shaped after the DMTF rackmount mockup and, for the push URI, the AMI-based DGX BMC
        (tests/fixtures/redfish/dmtf-rackmount1, nvidia-nvfwupd)."""
        up = self.profile.update
        doc: dict[str, Any] = {
            "@odata.id": f"{R}/UpdateService", "@odata.type": "#UpdateService.v1_11_0.UpdateService",
            "Id": "UpdateService", "Name": "Update Service", "ServiceEnabled": True, "Status": status(),
            "FirmwareInventory": ref(f"{R}/UpdateService/FirmwareInventory")}
        if up.simple_update:
            doc["Actions"] = {"#UpdateService.SimpleUpdate": {
                "target": f"{R}/UpdateService/Actions/UpdateService.SimpleUpdate",
                "TransferProtocol@Redfish.AllowableValues": ["HTTP", "HTTPS"]}}
        if up.multipart_push:
            doc["MultipartHttpPushUri"] = f"{R}/UpdateService/upload"
            doc["MaxImageSizeBytes"] = 430198784     # the DGX BMC's (fixtures/redfish/nvidia-nvfwupd)
        return doc

    def software(self, key: str) -> dict[str, Any]:
        return {"@odata.id": f"{R}/UpdateService/FirmwareInventory/{key}",
                "@odata.type": "#SoftwareInventory.v1_10_0.SoftwareInventory", "Id": key, "Name": key,
                "Version": self.firmware[key], "Updateable": True, "Status": status()}

    def task_service(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/TaskService", "@odata.type": "#TaskService.v1_2_0.TaskService",
                "Id": "TaskService", "Name": "Task Service", "ServiceEnabled": True,
                "CompletedTaskOverWritePolicy": "Oldest", "LifeCycleEventOnTaskStateChange": False,
                "Status": status(), "Tasks": ref(f"{R}/TaskService/Tasks")}

    def job(self, job: Job) -> dict[str, Any]:
        """A Dell job (fixtures/redfish/dell-openmanage-docs): reached only through Location."""
        return {"@odata.id": self.job_uri(job.id), "@odata.type": "#DellJob.v1_5_0.DellJob", "Id": job.id,
                "Name": job.name, "JobType": "BIOSConfiguration", "JobState": job.state, "Message": job.message,
                "MessageId": "JCP001" if job.state == "Scheduled" else "PR19",
                "PercentComplete": {"Scheduled": 0, "Running": 50}.get(job.state, 100),
                "TargetSettingsURI": None, "Description": "Job Instance"}

    def session_service(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/SessionService", "@odata.type": "#SessionService.v1_1_9.SessionService",
                "Id": "SessionService", "Name": "Session Service", "ServiceEnabled": True, "SessionTimeout": 1800,
                "Status": status(), "Sessions": ref(f"{R}/SessionService/Sessions")}

    def account_service(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/AccountService", "@odata.type": "#AccountService.v1_15_0.AccountService",
                "Id": "AccountService", "Name": "Account Service", "ServiceEnabled": True, "Status": status(),
                "Accounts": ref(f"{R}/AccountService/Accounts"), "Roles": ref(f"{R}/AccountService/Roles")}

    def account(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/AccountService/Accounts/1", "@odata.type": "#ManagerAccount.v1_12_0.ManagerAccount",
                "Id": "1", "Name": "User Account", "UserName": self.username, "RoleId": "Administrator",
                "Enabled": True, "Locked": False, "Password": None, "AccountTypes": ["Redfish"],
                "Links": {"Role": ref(f"{R}/AccountService/Roles/Administrator")}}

    def role(self) -> dict[str, Any]:
        return {"@odata.id": f"{R}/AccountService/Roles/Administrator", "@odata.type": "#Role.v1_3_2.Role",
                "Id": "Administrator", "Name": "Administrator", "RoleId": "Administrator", "IsPredefined": True,
                "AssignedPrivileges": ["Login", "ConfigureManager", "ConfigureUsers", "ConfigureSelf",
                                       "ConfigureComponents"]}
