"""Unit tests of bringup.discovery.verify: expected node vs inventory -> findings."""

from __future__ import annotations

import pytest

from bringup.discovery.verify import ExpectedNode, verify
from bringup.redfish.models import Gpu, Inventory, Nic, SystemInfo
from bringup.sku import load_skus

SKU = load_skus()["hgx-h100-80gb"]
IFACES = ["bmc", "mgmt0"] + [f"cx{i}" for i in range(SKU.nics.compute)]
MACS = {iface: f"02:00:00:00:00:{i:02x}" for i, iface in enumerate(IFACES)}


def expected(**kw) -> ExpectedNode:
    return ExpectedNode(name="n1", sku=SKU, macs=dict(MACS), bmc_address="127.0.0.1", serial="SN1", **kw)


def inventory(macs: dict[str, str] | None = None, gpus: int | None = None, **kw) -> Inventory:
    macs = MACS if macs is None else macs
    count = SKU.gpu.count if gpus is None else gpus
    return Inventory(
        address="127.0.0.1",
        system=SystemInfo(id="1", serial=kw.pop("serial", "SN1"), power_state="On"),
        gpus=kw.pop("gpu_list", None) or [Gpu(id=f"GPU{i}", model=SKU.gpu.model, memory_mib=SKU.gpu.memory_mib,
                                              ecc_enabled=True) for i in range(count)],
        nics=[Nic(id=f"port{i}", mac=m, position=_position(iface)) for i, (iface, m) in enumerate(macs.items())],
        bios=kw.pop("bios", dict(SKU.bios)), firmware=[("BMC", "1.0")], **kw)


def _position(iface: str) -> tuple[int, int] | None:
    """Where the lab puts cxN: slot N+3 (vendor slot numbers need not start at 0), port 1."""
    return (int(iface[2:]) + 3, 1) if iface.startswith("cx") else None


def by_code(findings):
    return {f.code: f for f in findings}


def test_matching_node_has_no_problems():
    findings = verify(expected(), inventory())
    assert [f.code for f in findings] == ["firmware"]
    assert findings[0].severity == "info" and findings[0].evidence["versions"] == {"BMC": "1.0"}


def test_missing_gpu_is_critical_with_counts():
    f = by_code(verify(expected(), inventory(gpus=7)))["gpu_count"]
    assert f.severity == "critical" and f.evidence["expected"] == 8 and f.evidence["observed"] == 7


def test_wrong_gpu_model_and_memory():
    gpus = [Gpu(id=f"GPU{i}", model=SKU.gpu.model, memory_mib=SKU.gpu.memory_mib) for i in range(7)]
    gpus.append(Gpu(id="GPU7", model="NVIDIA A100-SXM4-40GB", memory_mib=40960))
    found = by_code(verify(expected(), inventory(gpu_list=gpus)))
    assert found["gpu_model"].evidence["observed"] == {"GPU7": "NVIDIA A100-SXM4-40GB"}
    assert found["gpu_memory"].evidence["observed_mib"] == {"GPU7": 40960}
    assert "gpu_count" not in found


def test_gpu_memory_within_tolerance_is_fine():
    gpus = [Gpu(id=f"GPU{i}", model=SKU.gpu.model, memory_mib=SKU.gpu.memory_mib - 512) for i in range(8)]
    assert "gpu_memory" not in by_code(verify(expected(), inventory(gpu_list=gpus)))


def test_ecc_disabled_is_critical_but_unknown_ecc_is_not():
    gpus = [Gpu(id=f"GPU{i}", model=SKU.gpu.model, memory_mib=SKU.gpu.memory_mib, ecc_enabled=(i != 3))
            for i in range(8)]
    f = by_code(verify(expected(), inventory(gpu_list=gpus)))["gpu_ecc_disabled"]
    assert f.severity == "critical" and f.evidence["gpus"] == ["GPU3"]
    unknown = [Gpu(id=f"GPU{i}", model=SKU.gpu.model, memory_mib=SKU.gpu.memory_mib) for i in range(8)]
    assert "gpu_ecc_disabled" not in by_code(verify(expected(), inventory(gpu_list=unknown)))


def test_missing_mac_is_critical_and_extra_mac_a_warning():
    macs = dict(MACS)
    macs["cx3"] = "02:aa:bb:cc:dd:ee"
    found = by_code(verify(expected(), inventory(macs)))
    assert found["nic_missing"].severity == "critical"
    assert found["nic_missing"].evidence == {"interface": "cx3", "expected_mac": MACS["cx3"]}
    assert found["nic_extra"].severity == "warning"
    assert list(found["nic_extra"].evidence["macs"].values()) == ["02:aa:bb:cc:dd:ee"]


def test_mac_reported_under_the_same_port_name_is_named_in_the_evidence():
    inv = inventory()
    inv.nics[3] = Nic(id="cx1", mac="02:aa:bb:cc:dd:ee")        # port named cx1 has a new board
    f = by_code(verify(expected(), inv))["nic_missing"]
    assert f.evidence["bmc_port_same_name_mac"] == "02:aa:bb:cc:dd:ee"


def test_expected_macs_are_normalised_like_the_adapter_does():
    node = ExpectedNode(name="n", sku=SKU, bmc_address="x", macs={"cx0": MACS["cx0"].upper().replace(":", "-")})
    assert node.macs["cx0"] == MACS["cx0"]
    inv = inventory({"cx0": MACS["cx0"]})
    assert "nic_missing" not in by_code(verify(node, inv))


def test_swapped_macs_are_critical_whatever_the_bmc_calls_its_ports():
    inv = inventory()
    a = next(n for n in inv.nics if n.mac == MACS["cx1"])
    b = next(n for n in inv.nics if n.mac == MACS["cx2"])
    a.position, b.position = b.position, a.position     # cx1's MAC sits where cx2 belongs
    for n in inv.nics:
        n.id = f"NIC.Slot.{n.position[0] if n.position else 0}-1-1"   # vendor names, not ours
    findings = verify(expected(), inv)
    swapped = sorted((f.evidence["interface"], f.evidence["mac_belongs_to"]) for f in findings
                     if f.code == "nic_swapped")
    assert swapped == [("cx1", "cx2"), ("cx2", "cx1")]
    assert all(f.severity == "critical" for f in findings if f.code == "nic_swapped")
    assert "nic_missing" not in by_code(findings)     # every MAC is there: only the places are wrong


def test_ports_named_like_netbox_do_not_hide_a_swap_nor_fake_one():
    inv = inventory()
    for n in inv.nics:                                # the BMC happens to use NetBox's names...
        n.id = next(i for i, m in MACS.items() if m == n.mac)
    assert "nic_swapped" not in by_code(verify(expected(), inv))
    a = next(n for n in inv.nics if n.id == "cx4")
    b = next(n for n in inv.nics if n.id == "cx5")
    a.mac, b.mac = b.mac, a.mac                       # ...and the names move with the MACs
    assert "nic_swapped" in by_code(verify(expected(), inv))


def test_unknown_port_positions_are_a_warning_not_a_pass():
    inv = inventory()
    for n in inv.nics:
        n.position = None
    f = by_code(verify(expected(), inv))["nic_order_unknown"]
    assert f.severity == "warning" and len(f.evidence["ports_without_position"]) == SKU.nics.compute


def test_a_missing_nic_does_not_shift_the_blame_onto_its_neighbours():
    macs = dict(MACS)
    macs["cx3"] = "02:aa:bb:cc:dd:ee"
    found = by_code(verify(expected(), inventory(macs)))
    assert "nic_missing" in found and "nic_swapped" not in found


def test_unavailable_members_are_a_warning_naming_each():
    inv = inventory()
    inv.note("/redfish/v1/Systems/1/EthernetInterfaces/HPCNet0", "invalid", "'Not Available' is not a MAC",
             path="$.MACAddress")
    inv.note("/redfish/v1/Chassis/1/NetworkAdapters/FC.Slot.1/NetworkPorts/FC.Slot.1-1", "not_ethernet", "FC")
    f = by_code(verify(expected(), inv))["inventory_incomplete"]
    assert f.severity == "warning"
    assert [u["uri"] for u in f.evidence["unavailable"]] == ["/redfish/v1/Systems/1/EthernetInterfaces/HPCNet0"]


def test_bios_drift_lists_each_attribute():
    bios = dict(SKU.bios, IommuSupport="Enabled", PowerProfile="Balanced")
    f = by_code(verify(expected(), inventory(bios=bios)))["bios_drift"]
    assert f.severity == "warning"
    assert f.evidence["attributes"] == {"IommuSupport": {"expected": "Disabled", "observed": "Enabled"},
                                        "PowerProfile": {"expected": "MaxPerformance", "observed": "Balanced"}}
    f = by_code(verify(expected(), inventory(bios=bios), bios_drift_severity="critical"))["bios_drift"]
    assert f.severity == "critical"


def test_missing_bios_attribute_is_drift():
    bios = {k: v for k, v in SKU.bios.items() if k != "BootMode"}
    f = by_code(verify(expected(), inventory(bios=bios)))["bios_drift"]
    assert f.evidence["attributes"]["BootMode"]["observed"] is None


def test_serial_mismatch_means_another_server():
    f = by_code(verify(expected(), inventory(serial="SN2")))["serial_mismatch"]
    assert f.severity == "critical" and f.evidence == {"expected": "SN1", "observed": "SN2"}


def test_bad_expected_mac_is_rejected():
    with pytest.raises(ValueError):
        ExpectedNode(name="n", sku=SKU, bmc_address="x", macs={"cx0": "zz"})
