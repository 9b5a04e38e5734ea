"""Fleet profile validation: every bad input names its file, line and field."""

from pathlib import Path

import pytest

from bringup.errors import ConfigError
from lab.fleet import FaultKind, loads_fleet

SKUS = {"hgx-h100-80gb": 8, "hgx-h200-141gb": 8}

GOOD = """\
site: lab-x
pools:
  p1: {workload: training}
nodes:
  - {name: n1, rack: r1, sku: hgx-h100-80gb, pool: p1, bmc_address: 127.10.0.1, address: 127.20.0.1}
  - name: n2
    rack: r1
    sku: hgx-h200-141gb
    pool: p1
    bmc_address: 127.10.0.2
    address: 127.20.0.2
    macs: {cx3: "02:00:00:00:00:03"}
    faults:
      - {kind: xid, value: 79, gpu: 2}
"""


def test_good_profile_parses():
    fleet = loads_fleet(GOOD, SKUS)
    assert [n.name for n in fleet.nodes] == ["n1", "n2"]
    n2 = fleet.node("n2")
    assert n2.mac_of("cx3") == "02:00:00:00:00:03"
    assert n2.faults_of(FaultKind.XID)[0].value == 79
    assert fleet.pools["p1"].sharing == "exclusive"


def test_derived_macs_are_stable_unique_and_local():
    fleet = loads_fleet(GOOD, SKUS)
    macs = [n.mac_of(i) for n in fleet.nodes for i in n.interface_names(8)]
    assert len(set(macs)) == len(macs) == 20
    assert all(m.startswith("02:") for m in macs if m != "02:00:00:00:00:03")
    assert loads_fleet(GOOD, SKUS).nodes[0].mac_of("cx0") == fleet.nodes[0].mac_of("cx0")


def test_unknown_sku_names_line_and_field():
    text = GOOD.replace("sku: hgx-h200-141gb", "sku: hgx-b200")
    with pytest.raises(ConfigError) as exc:
        loads_fleet(text, SKUS, source="fleet.yaml")
    msg = str(exc.value)
    assert "fleet.yaml:8 nodes[1].sku" in msg and "hgx-b200" in msg and "hgx-h100-80gb" in msg


def test_duplicate_mac_names_both_nodes():
    text = GOOD.replace('macs: {cx3: "02:00:00:00:00:03"}', 'macs: {cx3: "02:00:00:00:00:03", cx4: "02:00:00:00:00:03"}')
    with pytest.raises(ConfigError, match=r"nodes\[1\]\.macs\.cx4: MAC 02:00:00:00:00:03 is already used by nodes\[1\]"):
        loads_fleet(text, SKUS)


def test_duplicate_mac_across_nodes():
    text = GOOD.replace("address: 127.20.0.1}", 'address: 127.20.0.1, macs: {mgmt0: "02:00:00:00:00:03"}}')
    with pytest.raises(ConfigError, match=r"already used by nodes\[0\] \(n1\)"):
        loads_fleet(text, SKUS)


def test_bad_mac_and_non_loopback_address_reported_together():
    text = GOOD.replace('"02:00:00:00:00:03"', '"zz:00"').replace("address: 127.20.0.2", "address: 10.1.1.1")
    with pytest.raises(ConfigError) as exc:
        loads_fleet(text, SKUS, source="f.yaml")
    msg = str(exc.value)
    assert "f.yaml:11 nodes[1].address" in msg and "not a loopback" in msg
    assert "nodes[1].macs" in msg and "zz:00" in msg


def test_bad_yaml_names_line():
    with pytest.raises(ConfigError, match=r"f.yaml:4: not valid YAML"):
        loads_fleet("site: x\nnodes:\n  - {name: [\n", SKUS, source="f.yaml")


def test_duplicate_key_refused():
    with pytest.raises(ConfigError, match="key 'site' appears twice"):
        loads_fleet("site: a\nsite: b\n", SKUS)


def test_unknown_fault_kind_and_unknown_pool():
    text = GOOD.replace("kind: xid", "kind: gremlins").replace("pool: p1, bmc", "pool: nope, bmc")
    with pytest.raises(ConfigError) as exc:
        loads_fleet(text, SKUS)
    msg = str(exc.value)
    assert "faults[0].kind" in msg
    # cross checks run only once the structure is valid: fix the fault and the pool shows
    with pytest.raises(ConfigError, match=r"unknown pool 'nope'; pools are: p1"):
        loads_fleet(GOOD.replace("pool: p1, bmc", "pool: nope, bmc"), SKUS)


def test_duplicate_addresses_and_names():
    text = GOOD.replace("name: n2", "name: n1").replace("bmc_address: 127.10.0.2", "bmc_address: 127.10.0.1")
    with pytest.raises(ConfigError) as exc:
        loads_fleet(text, SKUS)
    assert "name n1 is already used" in str(exc.value)
    assert "BMC endpoint 127.10.0.1:8443 is already used" in str(exc.value)


def test_mac_on_unknown_interface():
    with pytest.raises(ConfigError, match=r"macs.eth9: no such interface"):
        loads_fleet(GOOD.replace("cx3:", "eth9:"), SKUS)


def test_the_default_lab_fleet_is_valid(lab_fleet):
    assert len(lab_fleet.nodes) == 10
    assert sum(1 for n in lab_fleet.nodes if n.faults) >= 3


def test_bmc_vendor_defaults_to_the_lab_bmc_and_must_name_a_profile():
    fleet = loads_fleet(GOOD, SKUS)
    assert fleet.nodes[0].bmc_vendor == "bmcsim"
    text = GOOD.replace("    address: 127.20.0.2\n", "    address: 127.20.0.2\n    bmc_vendor: dell-idrac\n")
    assert loads_fleet(text, SKUS).node("n2").bmc_vendor == "dell-idrac"
    with pytest.raises(ConfigError) as exc:
        loads_fleet(text.replace("dell-idrac", "dell-idrac9"), SKUS, source="fleet.yaml")
    assert "nodes[1].bmc_vendor" in str(exc.value) and "hpe-ilo" in str(exc.value)


@pytest.mark.parametrize("fault", ["{kind: member_404, iface: cx3}", "{kind: fc_port}",
                                   "{kind: mac_not_available, iface: cx1}", "{kind: chipset_function}",
                                   "{kind: bios_second_reset}", "{kind: boot_fail}"])
def test_inventory_and_boot_fault_kinds_parse(fault):
    text = GOOD.replace("      - {kind: xid, value: 79, gpu: 2}", f"      - {fault}")
    node = loads_fleet(text, SKUS).node("n2")
    assert node.faults[0].kind in set(FaultKind)


def test_the_lab_fleets_mix_vendors():
    from bringup.sku import load_skus, nic_counts
    from lab.fleet import load_fleet
    root = Path(__file__).resolve().parents[3]
    for path in (root / "lab/fleets/default.yaml", root / "tests/fixtures/fleets/flow8.yaml"):
        vendors = {n.bmc_vendor for n in load_fleet(path, nic_counts(load_skus())).nodes}
        assert len(vendors) >= 3, path
