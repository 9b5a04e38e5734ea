"""`bringup netbox apply` and `bringup lab seed` against a real NetBox 4.7."""

import pytest

from bringup.errors import ConflictError
from bringup.netbox.schema import Action, load_schema
from bringup.netbox.schema_apply import apply_schema
from lab.seed import seed

pytestmark = pytest.mark.integration


def test_apply_twice_second_run_changes_nothing(netbox):
    schema = load_schema()
    first = apply_schema(netbox, schema)
    assert all(c.action is Action.CREATE for c in first)
    assert len(first) >= 40
    second = apply_schema(netbox, schema)
    assert [c for c in second if c.action is not Action.NOOP] == []
    # read back through the API: choice custom fields, config context data
    cf = netbox.api.extras.custom_fields.get(name="bringup_stage")
    assert cf.type.value == "select"
    cc = netbox.api.extras.config_contexts.get(name="sku-hgx-h100-80gb")
    assert cc.data["bringup"]["gpu"]["count"] == 8


def test_drift_on_managed_object_is_repaired(netbox):
    schema = load_schema()
    apply_schema(netbox, schema)
    tag = netbox.api.extras.tags.get(slug="bringup-quarantine")
    tag.update({"color": "000000"})
    changes = [c for c in apply_schema(netbox, schema) if c.action is not Action.NOOP]
    assert [(c.kind, c.key, c.action) for c in changes] == [("tag", "bringup-quarantine", Action.UPDATE)]
    assert netbox.api.extras.tags.get(slug="bringup-quarantine").color == "f44336"


def test_foreign_conflicting_object_is_never_overwritten(netbox):
    netbox.api.dcim.manufacturers.create({"name": "Supermicro Inc", "slug": "supermicro",
                                          "description": "entered by hand"})
    with pytest.raises(ConflictError) as exc:
        apply_schema(netbox, load_schema())
    assert "manufacturer supermicro" in str(exc.value) and "name" in str(exc.value)
    # nothing at all was written: the check runs before any change
    assert netbox.api.extras.custom_fields.get(name="bringup_stage") is None
    assert netbox.api.dcim.manufacturers.get(slug="supermicro").name == "Supermicro Inc"


def test_seed_writes_planned_devices_with_macs_and_ips(netbox, lab_fleet, skus):
    apply_schema(netbox, load_schema())
    report = seed(netbox, lab_fleet, skus)
    size = len(lab_fleet.nodes)   # ten nodes of 8 GPUs and 10 interfaces each
    assert size == 10 and len(report.created) == size and report.macs == 10 * size
    again = seed(netbox, lab_fleet, skus)
    assert again.created == [] and len(again.existing) == size and again.macs == 0
    nodes = {n.name: n for n in netbox.nodes(site="lab-east", macs=True)}
    # NetBox 4.7 serves the GraphQL reads: falling back to REST would cost it 5x the CPU
    assert netbox.reads_through == "graphql"
    assert len(nodes) == size
    for spec in lab_fleet.nodes:
        rec = nodes[spec.name]
        assert rec.status == "planned" and rec.stage == "planned"
        assert rec.bmc_address == spec.bmc_address and rec.address == spec.address
        assert rec.macs == {i: spec.mac_of(i) for i in spec.interface_names(8)}
        # discovery's own read of one device's MACs (one GraphQL query) says the same
        assert netbox.macs(rec.id) == rec.macs
        assert rec.sku.sku == spec.sku
        assert rec.pool["workload"] == lab_fleet.pools[spec.pool].workload
    assert len(netbox.nodes(rack="r01")) == 6
    assert [n.name for n in netbox.nodes(names=["gpu-r02-n04"])] == ["gpu-r02-n04"]
    # a node read names its device the same whichever API read it (a spooled result is
    # replayed only into the device it names: bringup.lifecycle.engine.device_of)
    from bringup.lifecycle.engine import device_of
    from bringup.netbox.adapter import NetBox
    over_rest = {n.name: n for n in NetBox(netbox.api, graphql=False).nodes(site="lab-east")}
    for name, rec in nodes.items():
        assert rec.created.endswith("+00:00") and rec.version, (name, rec.created, rec.version)
        assert (rec.created, rec.url, rec.version) == (over_rest[name].created, over_rest[name].url,
                                                       over_rest[name].version)
        assert device_of(rec) == device_of(over_rest[name]) == f"{rec.url} created {rec.created}"


def test_a_seed_again_after_creates_netbox_did_not_answer_links_what_they_made(netbox, lab_fleet, skus):
    """A bulk create NetBox acted on but answered too late leaves a MAC or IP address
    object on its interface, unlinked; the seed's next try links it instead of creating
    another (NetBox refuses a second IP of the same address: ENFORCE_GLOBAL_UNIQUE)."""
    apply_schema(netbox, load_schema())
    seed(netbox, lab_fleet, skus)
    a = netbox.api
    spec = lab_fleet.nodes[0]
    dev = a.dcim.devices.get(name=spec.name)
    itf = next(i for i in a.dcim.interfaces.filter(device_id=dev.id) if i.primary_mac_address is not None)
    itf.update({"primary_mac_address": None})
    dev.update({"oob_ip": None})
    macs, ips = a.dcim.mac_addresses.count(), a.ipam.ip_addresses.count()
    again = seed(netbox, lab_fleet, skus)
    assert again.macs == 1 and again.created == []
    assert (a.dcim.mac_addresses.count(), a.ipam.ip_addresses.count()) == (macs, ips)
    rec = netbox.nodes(names=[spec.name], macs=True)[0]
    assert rec.macs == {i: spec.mac_of(i) for i in spec.interface_names(8)}
    assert rec.bmc_address == spec.bmc_address


def test_seed_before_schema_says_what_to_do(netbox, lab_fleet, skus):
    from bringup.errors import NotFoundError
    with pytest.raises(NotFoundError, match="bringup netbox apply"):
        seed(netbox, lab_fleet, skus)


def test_stage_custom_fields_and_journal(netbox, lab_fleet, skus):
    apply_schema(netbox, load_schema())
    seed(netbox, lab_fleet, skus)
    node = netbox.nodes(names=["gpu-r01-n01"])[0]
    netbox.update_node(node.id, stage="discovered", status="staged", fields={"gpu_serials": ["A", "B"]})
    netbox.journal(node.id, "### discovery\n\nall good", kind="success")
    again = netbox.nodes(names=["gpu-r01-n01"])[0]
    assert again.stage == "discovered" and again.status == "staged"
    assert again.custom_fields["gpu_serials"] == ["A", "B"]
    entries = netbox.journal_entries(node.id)
    assert entries[0]["kind"] == "success" and "all good" in entries[0]["comments"]
