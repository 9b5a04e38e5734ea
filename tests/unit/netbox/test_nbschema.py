"""Schema diffing: what `bringup netbox apply` decides for each object."""

from bringup.netbox.schema import MARK, Action, diff, load_schema, marked


def test_missing_object_is_created():
    c = diff("tag", "t", {"name": "t", "color": "ff0000"}, None)
    assert c.action is Action.CREATE


def test_equal_after_netbox_normalisation_is_noop():
    existing = {"name": "stage", "type": {"value": "select", "label": "Selection"},
                "choice_set": {"id": 4, "url": "http://x/api/extras/custom-field-choice-sets/4/", "display": "s"},
                "object_types": ["dcim.device"], "description": marked("x"), "created": "2026-01-01"}
    desired = {"type": "select", "choice_set": 4, "object_types": ["dcim.device"], "description": marked("x")}
    assert diff("custom field", "stage", desired, existing).action is Action.NOOP


def test_drift_on_our_object_is_an_update_with_fields():
    existing = {"name": "t", "color": "00ff00", "description": marked("")}
    c = diff("tag", "t", {"color": "ff0000", "description": marked("")}, existing)
    assert c.action is Action.UPDATE
    assert c.fields == {"color": ("00ff00", "ff0000")}


def test_drift_on_foreign_object_is_a_conflict():
    existing = {"name": "t", "color": "00ff00", "description": "made by hand"}
    c = diff("tag", "t", {"color": "ff0000", "description": marked("")}, existing)
    assert c.action is Action.CONFLICT
    assert "conflict" in c.describe() and "color" in c.describe()


def test_marked_is_idempotent():
    assert marked(marked("abc")) == f"abc {MARK}"
    assert marked("") == MARK


def test_repo_schema_loads():
    s = load_schema()
    assert {c["name"] for c in s.choice_sets} == {"bringup-stage", "bringup-burnin-status"}
    names = {cf["name"] for cf in s.custom_fields}
    for required in ("bringup_stage", "burnin_status", "burnin_last", "burnin_summary", "image_id",
                     "driver_version", "cuda_version", "nccl_version", "bios_profile"):
        assert required in names
    slugs = {dt["slug"] for dt in s.device_types}
    assert slugs == {"hgx-h100-80gb", "hgx-h200-141gb"}
    for dt in s.device_types:
        names = [i["name"] for i in dt["interfaces"]]
        assert names[:2] == ["bmc", "mgmt0"] and len([n for n in names if n.startswith("cx")]) == 8
