"""The client against DMTF's public mockups (data nobody here wrote), served read-only.

Expected values are read from the mockup files themselves, so the test checks that the
client reads what the documents say rather than numbers copied into the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bringup.discovery.crawl import discover_one
from bringup.discovery.verify import ExpectedNode
from bringup.errors import RedfishError
from bringup.redfish import Credentials, connect
from bringup.sku import load_skus

MOCKUPS = Path(__file__).resolve().parents[4] / "shared" / "redfish" / "mockups"

pytestmark = pytest.mark.integration
CREDS = Credentials("reader", "not-checked-by-a-static-mockup")


def _doc(mockup: str, rel: str) -> dict:
    return json.loads((MOCKUPS / mockup / rel / "index.json").read_text())


def _members(mockup: str, rel: str) -> list[dict]:
    coll = _doc(mockup, rel)
    return [_doc(mockup, m["@odata.id"][len("/redfish/v1/"):]) for m in coll["Members"]]


@pytest.mark.parametrize("mockup", ["public-tower", "public-rackmount1"])
def test_inventory_matches_the_mockup_documents(mockup_server, mockup):
    url = mockup_server(mockup)
    system_rel = _doc(mockup, "Systems")["Members"][0]["@odata.id"][len("/redfish/v1/"):]
    system = _doc(mockup, system_rel)
    procs = [p for p in _members(mockup, f"{system_rel}/Processors")
             if p.get("Status", {}).get("State") != "Absent"]   # an empty socket is no CPU
    gpus = [p for p in procs if p.get("ProcessorType") == "GPU"]
    cpus = [p for p in procs if p.get("ProcessorType") == "CPU"]
    dimms = [d for d in _members(mockup, f"{system_rel}/Memory") if d.get("Status", {}).get("State") != "Absent"]
    host_macs = {e["MACAddress"].lower() for e in _members(mockup, f"{system_rel}/EthernetInterfaces")
                 if e.get("MACAddress")}
    firmware = {(s.get("Name") or s["Id"], s.get("Version", "")) for s in _members(mockup, "UpdateService/FirmwareInventory")}

    with connect(url, CREDS, retries=0) as bmc:   # static server: no sessions, Basic fallback
        inv = bmc.inventory()
        assert bmc.request_count > 5

    assert inv.system.serial == system["SerialNumber"]
    assert inv.system.manufacturer == system["Manufacturer"]
    assert inv.system.power_state == system["PowerState"]
    assert inv.system.bios_version == system.get("BiosVersion")
    assert len(inv.cpus) == len(cpus)
    assert sorted(g.id for g in inv.gpus) == sorted(g["Id"] for g in gpus)
    for g in inv.gpus:
        src = next(p for p in gpus if p["Id"] == g.id)
        assert g.model == src["Model"]
        assert g.memory_mib == src["MemorySummary"]["TotalMemorySizeMiB"]
    assert len(inv.memory) == len(dimms)
    assert host_macs <= {n.mac for n in inv.nics}
    assert firmware == set(inv.firmware)
    assert inv.bios == _doc(mockup, f"{system_rel}/Bios")["Attributes"]


def test_the_tower_has_two_gpus(mockup_server):
    with connect(mockup_server("public-tower"), CREDS, retries=0) as bmc:
        gpus = bmc.inventory().gpus
    assert len(gpus) == 2 and all(g.source == "Processors" for g in gpus)


def _tower_gpu1() -> bytes:
    return (MOCKUPS / "public-tower" / "Systems/437XR1238R2/Processors/GPU1/index.json").read_bytes()


def test_a_truncated_member_is_a_finding_about_that_member(mockup_server):
    uri = "/redfish/v1/Systems/437XR1238R2/Processors/GPU1"
    body = _tower_gpu1()
    url = mockup_server("public-tower", {uri: body[: len(body) // 2]})
    with connect(url, CREDS, retries=0) as bmc:
        inv = bmc.inventory()
    [gap] = inv.unavailable
    assert (gap.uri, gap.kind, gap.path) == (uri, "invalid", "$") and "not valid JSON" in gap.reason
    assert [g.id for g in inv.gpus] == ["GPU2"] and inv.cpus and inv.memory      # the rest stands


def test_garbage_service_root_is_a_clear_error(mockup_server):
    url = mockup_server("public-tower", {"/redfish/v1": b"<html><body>Login</body></html>"})
    # a web page where the service root should be: the address does not serve Redfish
    # (a RedfishError that says so), not a BMC whose JSON is broken
    with pytest.raises(RedfishError) as err:
        connect(url, CREDS, retries=0)
    assert "/redfish/v1/" in str(err.value) and "answered HTML, not Redfish JSON" in str(err.value)


def test_malformed_mac_names_the_member_and_json_path(mockup_server):
    uri = "/redfish/v1/Systems/437XR1238R2/EthernetInterfaces/Network1"
    doc = json.loads((MOCKUPS / "public-tower" / uri[len("/redfish/v1/"):] / "index.json").read_text())
    doc["MACAddress"] = "not-a-mac"
    url = mockup_server("public-tower", {uri: json.dumps(doc).encode()})
    with connect(url, CREDS, retries=0) as bmc:
        inv = bmc.inventory()
    [gap] = inv.unavailable
    assert (gap.uri, gap.kind, gap.path) == (uri, "invalid", "$.MACAddress")
    assert len(inv.gpus) == 2


def test_discovery_of_a_garbage_member_is_a_warning_naming_it_never_a_silent_pass(mockup_server):
    uri = "/redfish/v1/Systems/437XR1238R2/Processors/GPU1"
    url = mockup_server("public-tower", {uri: _tower_gpu1()[:40]})
    sku = next(iter(load_skus().values()))
    node = ExpectedNode(name="tower", sku=sku, bmc_address=url, macs={})
    result = discover_one(node, lambda _addr: CREDS, retries=0)
    assert result.error is None and result.inventory is not None
    incomplete = next(f for f in result.findings if f.code == "inventory_incomplete")
    assert incomplete.severity == "warning" and [u["uri"] for u in incomplete.evidence["unavailable"]] == [uri]
    assert not result.ok
