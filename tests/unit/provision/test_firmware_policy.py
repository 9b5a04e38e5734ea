"""Firmware policy (bringup.provision.firmware_policy) on real FirmwareInventory data: a DGX H100's devices
(NVIDIA nvfwupd guide), DMTF's mockup members, a Dell iDRAC NIC member."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from bringup.provision.firmware_policy import FirmwareRule, Member, check, compare, parse_version, reasons
from bringup.sku import load_skus

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "redfish"
H100 = load_skus()["hgx-h100-80gb"].firmware


def dgx_members() -> list[Member]:
    doc = json.loads((FIX / "nvidia-nvfwupd" / "dgx-h100-show-version.json").read_text())
    return [Member(id=d["AP Name"], name=None, version=d["Sys Version"],
                   uri=f"/redfish/v1/UpdateService/FirmwareInventory/{d['AP Name']}")
            for d in doc["Firmware Devices"]]


def member(name: str, source: str = "dmtf-rackmount1") -> Member:
    doc = json.loads((FIX / source / name).read_text())
    return Member(id=doc["Id"], name=doc.get("Name"), version=doc.get("Version"), uri=doc["@odata.id"])


@pytest.mark.parametrize(("text", "scheme", "parsed"), [
    ("96.00.BC.00.01", "hex", (0x96, 0, 0xBC, 0, 1)),
    ("96.00.BC.00.01", "dotted", None),              # two runs of two parts each: ambiguous
    ("28.42.1000", "dotted", (28, 42, 1000)),
    ("P79 v1.45", "dotted", (1, 45)),                 # DMTF mockup BIOS: the vendor prefix is a label
    ("1.45.455b66-rev4", "dotted", (1, 45, 455)),
    ("00.02.0192.0000_n00", "dotted", (0, 2, 192, 0)),
    ("HGX-22.10-1-rc77", "dotted", (22, 10)),
    ("2.8.2-20-gfc1389898", "dotted", (2, 8, 2)),
    ("1.2 build 3.4", "dotted", None),
    ("N/A", "dotted", None),
    ("", "hex", None),
    ("96.00.BG.00.01", "hex", None),
])
def test_versions_are_read_tolerantly_or_not_at_all(text, scheme, parsed):
    assert parse_version(text, scheme) == parsed


def test_hex_compares_as_numbers_and_short_versions_pad_with_zeros():
    assert compare(parse_version("96.00.BC.00.01", "hex"), parse_version("96.00.99.00.01", "hex")) == 1
    assert compare((1, 2), (1, 2, 0)) == 0 and compare((1, 9), (1, 10)) == -1


def test_a_dgx_h100_against_the_h100_policy():
    found = {(f.component, f.member): f for f in check(dgx_members(), H100)}
    gpus = [f for (c, _), f in found.items() if c == "GPU VBIOS"]
    assert len(gpus) == 8 and all(f.passed for f in gpus)        # 96.00.BC > 96.00.99 in hex
    assert all(f.passed for (c, _), f in found.items() if c in ("NVSwitch", "NIC", "BMC"))
    bios = found[("BIOS", "HostBIOS_0")]
    assert (bios.status, bios.severity, bios.found) == ("drift", "critical", "01.05.03") and bios.blocking
    cpld = found[("CPLD", "CPLDMB_0")]
    assert (cpld.status, cpld.severity, cpld.blocking) == ("drift", "warning", False)
    assert reasons(list(found.values())) == [
        "firmware BIOS (HostBIOS_0): found 01.05.03, wanted >= 1.9.2 (01.05.03 is older than the minimum 1.9.2)"]


def test_a_dell_nic_is_matched_by_its_name_because_its_id_carries_the_version():
    nic = member("fw-mellanox-nic.json", "dell-idrac-opi")
    [f] = [f for f in check([nic], H100) if f.member]
    assert (f.component, f.status, f.found) == ("NIC", "drift", "24.35.20.00")


def test_an_unreadable_version_is_unknown_never_a_pass():
    rule = FirmwareRule(component="BIOS", match="^BIOS$", min="1.0", severity="critical")
    [f] = check([Member(id="BIOS", name=None, version="N/A")], [rule])
    assert (f.status, f.blocking) == ("unknown", True)
    [f] = check([Member(id="BIOS", name=None, version=None)], [rule])
    assert f.status == "unknown"


def test_exact_and_missing_and_count():
    bmc = member("fw-bmc.json")
    exact = FirmwareRule(component="BMC", match="^BMC$", exact="1.45.455b66-rev4")
    assert [f.status for f in check([bmc], [exact])] == ["ok"]
    other = FirmwareRule(component="BMC", match="^BMC$", exact="1.45.456")
    assert [f.status for f in check([bmc], [other])] == ["drift"]
    gpus = FirmwareRule(component="GPU", match="^GPU", min="1.0", count=8, severity="critical")
    [f] = check([bmc], [gpus])
    assert (f.status, f.blocking, f.member) == ("missing", True, "")


def test_a_rule_must_be_well_formed():
    with pytest.raises(ValidationError, match="exactly one of min or exact"):
        FirmwareRule(component="x", match="x", min="1", exact="1")
    with pytest.raises(ValidationError, match="regular expression"):
        FirmwareRule(component="x", match="(", min="1")
    with pytest.raises(ValidationError, match="cannot be read"):
        FirmwareRule(component="x", match="x", min="zz", scheme="hex")
