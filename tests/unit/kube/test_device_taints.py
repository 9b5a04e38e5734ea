"""GPU-level quarantine through DRA device taints (bringup/kube/device_taints.py): the rule's
name, its manifest against the documented DeviceTaintRule fields, the parse back, a rule
someone else placed left alone; the calls against an in-memory stand-in for the client."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from bringup.errors import ConfigError, KubeConflictError, KubeNotFoundError
from bringup.kube import device_taints as dt
from bringup.kube import ownership

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "kube"
SUBDOMAIN = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")


def taint(**kw: Any) -> dt.GpuTaint:
    base = {"node": "gpu-r01-n01", "gpu": 3, "key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule",
            "reason": "XID 79 on GPU 3: fell off the bus", "placed_at": "2026-11-30T10:00:00+00:00"}
    return dt.GpuTaint(**{**base, **kw})


# --- names ----------------------------------------------------------------------------------
def test_rule_name_is_bringup_s_node_and_device():
    assert dt.rule_name("gpu-r01-n01", 3) == "bringup-gpu-gpu-r01-n01-gpu-3"
    assert dt.rule_name("node.example.com", 0) == "bringup-gpu-node.example.com-gpu-0"
    assert taint().device == "gpu-3"


@pytest.mark.parametrize("node", ["A" * 300, "n" * 250, "Node_X", "UPPER", "-dash-", "a..b"],
                         ids=["long-upper", "long", "underscore", "upper", "dashes", "empty-label"])
def test_a_name_that_would_not_do_is_cut_and_hashed_into_a_subdomain(node):
    name = dt.rule_name(node, 7)
    assert len(name) <= 253 and SUBDOMAIN.match(name), name
    assert name.startswith("bringup-gpu-") and name.endswith("-gpu-7")
    assert name == dt.rule_name(node, 7)                     # the same every time
    assert name != dt.rule_name(node + "x", 7)               # and distinct per node
    assert name != dt.rule_name(node, 6)


def test_two_nodes_that_lower_case_alike_get_two_names():
    assert dt.rule_name("Gpu-1", 0) != dt.rule_name("gpu-1", 0)


@pytest.mark.parametrize("node, gpu", [("", 0), ("n1", -1), ("n1", True), ("n1", "3")])
def test_no_node_or_a_bad_index_is_a_config_error(node, gpu):
    with pytest.raises(ConfigError):
        dt.rule_name(node, gpu)


# --- manifest -------------------------------------------------------------------------------
def test_manifest_has_the_documented_shape():
    m = dt.rule_manifest(taint())
    example = yaml.safe_load((FIX / "devicetaintrule-example.yaml").read_text())
    assert (m["apiVersion"], m["kind"]) == (example["apiVersion"], example["kind"]) == (dt.TAINT_API, "DeviceTaintRule")
    assert "namespace" not in m["metadata"]                       # cluster-scoped
    assert set(m["spec"]) <= set(example["spec"]) | {"deviceSelector"}
    assert m["spec"]["deviceSelector"] == {"driver": "gpu.nvidia.com", "pool": "gpu-r01-n01", "device": "gpu-3"}
    assert m["spec"]["taint"] == {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
    assert set(m["spec"]["taint"]) < set(example["spec"]["taint"])  # timeAdded is the server's to set
    assert "status" not in m


def test_manifest_carries_bringup_s_marks_and_labels():
    m = dt.rule_manifest(taint())
    assert m["metadata"]["annotations"] == {ownership.CORDON_BY: "bringup",
                                            ownership.CORDON_REASON: "XID 79 on GPU 3: fell off the bus",
                                            ownership.CORDON_TIMESTAMP: "2026-11-30T10:00:00+00:00"}
    assert m["metadata"]["labels"] == {dt.OWNER_LABEL: "bringup", dt.NODE_LABEL: "gpu-r01-n01", dt.GPU_LABEL: "3"}
    assert all(k.startswith("bringup.io/") for k in [*m["metadata"]["labels"], *m["metadata"]["annotations"]])


def test_manifest_without_a_time_is_stamped_now_and_other_versions_and_drivers_are_the_caller_s():
    m = dt.rule_manifest(taint(placed_at="", placed_by="bringup-healthwatch"), driver="gpu.example.com",
                         api_version="resource.k8s.io/v1")
    assert m["apiVersion"] == "resource.k8s.io/v1" and m["spec"]["deviceSelector"]["driver"] == "gpu.example.com"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", m["metadata"]["annotations"][ownership.CORDON_TIMESTAMP])
    assert m["metadata"]["annotations"][ownership.CORDON_BY] == "bringup-healthwatch"
    assert m["metadata"]["labels"][dt.OWNER_LABEL] == "bringup"   # still bringup's rule


def test_a_node_name_too_long_for_a_label_value_keeps_the_pool_and_drops_the_label():
    node = "n" * 70
    m = dt.rule_manifest(taint(node=node))
    assert dt.NODE_LABEL not in m["metadata"]["labels"] and m["spec"]["deviceSelector"]["pool"] == node
    assert dt.parse_rule(m).node == node


@pytest.mark.parametrize("change, says", [
    ({"effect": "PreferNoSchedule"}, "effect 'PreferNoSchedule'"),
    ({"effect": "None"}, "effect 'None'"),
    ({"key": "not a key!"}, "key 'not a key!'"),
    ({"key": ""}, "key ''"),
    ({"value": "x" * 64}, "at most 63"),
    ({"value": "fell off the bus"}, "value 'fell off the bus'"),
])
def test_a_taint_the_api_would_refuse_is_a_config_error_first(change, says):
    with pytest.raises(ConfigError, match=re.escape(says)):
        dt.rule_manifest(taint(**change))


# --- parse back -------------------------------------------------------------------------------
def test_parse_back_round_trip():
    t = taint(effect="NoExecute", placed_by="bringup")
    m = dt.rule_manifest(t)
    m["spec"]["taint"]["timeAdded"] = "2026-11-30T10:00:01Z"   # what the server adds
    m["status"] = {"conditions": []}
    assert dt.parse_rule(m) == t


def test_a_foreign_rule_is_ignored():
    example = yaml.safe_load((FIX / "devicetaintrule-example.yaml").read_text())
    assert not dt.is_ours(example) and dt.parse_rule(example) is None
    # a rule under bringup's very name but without its label is still not bringup's
    m = dt.rule_manifest(taint())
    m["metadata"]["labels"].pop(dt.OWNER_LABEL)
    assert dt.parse_rule(m) is None
    m["metadata"]["labels"][dt.OWNER_LABEL] = "someone-else"
    assert dt.parse_rule(m) is None


@pytest.mark.parametrize("mangle", [
    lambda m: m["spec"]["deviceSelector"].pop("device"),
    lambda m: m["spec"]["deviceSelector"].update(device="mig-1g.10gb-0"),
    lambda m: m["spec"]["deviceSelector"].pop("pool"),
    lambda m: m["spec"].pop("taint"),
    lambda m: m["spec"]["taint"].pop("key"),
    lambda m: m.pop("spec"),
], ids=["no-device", "not-a-gpu", "no-pool", "no-taint", "no-key", "no-spec"])
def test_an_odd_rule_of_bringup_s_parses_to_none_without_a_crash(mangle):
    m = dt.rule_manifest(taint())
    mangle(m)
    assert dt.parse_rule(m) is None
    assert dt.parse_rule(None) is None and dt.parse_rule("x") is None


# --- through a stand-in for the client (no socket) -----------------------------------------------
class FakeKube:
    """What device_taints asks of a KubeAdapter: ``_call`` (here against a dict of rules,
    answering as the API server's CustomObjects endpoints would), ``_note`` and a client."""

    def __init__(self) -> None:
        self.api_client = SimpleNamespace()
        self.rules: dict[str, dict[str, Any]] = {}
        self.notes: list[tuple[str, str]] = []
        self.rv = 0
        self.calls: list[str] = []

    def _note(self, node: str, reason: str, message: str, warning: bool = False) -> None:
        self.notes.append((node, reason))

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(body)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        obj["metadata"].setdefault("uid", f"uid-{obj['metadata']['name']}")
        obj["spec"]["taint"].setdefault("timeAdded", f"t{self.rv}")
        self.rules[obj["metadata"]["name"]] = obj
        return copy.deepcopy(obj)

    def _call(self, what: str, fn: Any, *args: Any, **kw: Any) -> Any:
        verb = fn.__name__.split("_")[0]
        self.calls.append(verb)
        group, version, plural = args[:3]
        assert (f"{group}/{version}", plural) == (dt.TAINT_API, "devicetaintrules")
        if verb == "list":
            want = dict(p.split("=") for p in kw["label_selector"].split(","))
            return {"items": [copy.deepcopy(r) for r in self.rules.values()
                              if all(r["metadata"].get("labels", {}).get(k) == v for k, v in want.items())]}
        if verb == "create":
            if args[3]["metadata"]["name"] in self.rules:
                raise KubeConflictError(f"{what}: 409 already exists")
            return self._store(args[3])
        name = args[3]
        if name not in self.rules:
            raise KubeNotFoundError(f"{what}: 404")
        if verb == "get":
            return copy.deepcopy(self.rules[name])
        if verb == "replace":
            if args[4]["metadata"].get("resourceVersion") != self.rules[name]["metadata"]["resourceVersion"]:
                raise KubeConflictError(f"{what}: 409 conflict")
            return self._store(args[4])
        if verb == "delete":
            pre = kw["body"].preconditions
            assert pre.uid == self.rules[name]["metadata"]["uid"]
            return self.rules.pop(name)
        raise AssertionError(verb)


def test_taint_list_untaint_through_the_client():
    kube = FakeKube()
    assert dt.taint_gpu(kube, taint()) == "bringup-gpu-gpu-r01-n01-gpu-3"
    dt.taint_gpu(kube, taint(node="gpu-r01-n02", gpu=0))
    assert [(t.node, t.gpu) for t in dt.gpu_taints(kube)] == [("gpu-r01-n01", 3), ("gpu-r01-n02", 0)]
    assert dt.gpu_taints(kube, "gpu-r01-n01") == [taint()]
    assert dt.untaint_gpu(kube, "gpu-r01-n01", 3) is True
    assert dt.untaint_gpu(kube, "gpu-r01-n01", 3) is False       # none left
    assert [(t.node, t.gpu) for t in dt.gpu_taints(kube)] == [("gpu-r01-n02", 0)]
    assert kube.notes == [("gpu-r01-n01", "GpuTainted"), ("gpu-r01-n02", "GpuTainted"),
                          ("gpu-r01-n01", "GpuUntainted")]


def test_tainting_again_replaces_bringup_s_rule_and_keeps_its_time_unless_the_effect_changes():
    kube = FakeKube()
    dt.taint_gpu(kube, taint())
    first = kube.rules["bringup-gpu-gpu-r01-n01-gpu-3"]["spec"]["taint"]["timeAdded"]
    dt.taint_gpu(kube, taint(value="48", reason="XID 48 on GPU 3"))
    rule = kube.rules["bringup-gpu-gpu-r01-n01-gpu-3"]
    assert rule["spec"]["taint"] == {"key": "gpu.nvidia.com/xid", "value": "48", "effect": "NoSchedule",
                                     "timeAdded": first}
    assert rule["metadata"]["annotations"][ownership.CORDON_REASON] == "XID 48 on GPU 3"
    dt.taint_gpu(kube, taint(effect="NoExecute"))
    assert kube.rules["bringup-gpu-gpu-r01-n01-gpu-3"]["spec"]["taint"]["timeAdded"] != first
    assert len(kube.rules) == 1


def test_a_foreign_rule_under_bringup_s_name_is_never_changed_nor_deleted():
    kube = FakeKube()
    foreign = yaml.safe_load((FIX / "devicetaintrule-example.yaml").read_text())
    foreign["metadata"]["name"] = dt.rule_name("gpu-r01-n01", 3)
    foreign.pop("status")
    kube._store(foreign)
    before = copy.deepcopy(kube.rules)
    with pytest.raises(KubeConflictError, match="not bringup's"):
        dt.taint_gpu(kube, taint())
    assert dt.untaint_gpu(kube, "gpu-r01-n01", 3) is False
    assert dt.gpu_taints(kube) == []
    assert kube.rules == before and "delete" not in kube.calls and "replace" not in kube.calls


def test_an_odd_rule_of_bringup_s_is_skipped_in_a_list():
    kube = FakeKube()
    dt.taint_gpu(kube, taint())
    dt.taint_gpu(kube, taint(gpu=4))
    kube.rules["bringup-gpu-gpu-r01-n01-gpu-4"]["spec"]["deviceSelector"]["device"] = "nic-0"
    assert dt.gpu_taints(kube, "gpu-r01-n01") == [taint()]


def test_a_cluster_without_the_api_says_so():
    kube = FakeKube()

    def missing(what: str, fn: Any, *a: Any, **kw: Any) -> Any:
        raise KubeNotFoundError(f"{what}: 404 the server could not find the requested resource")
    kube._call = missing
    with pytest.raises(KubeNotFoundError, match="DRADeviceTaintRules"):
        dt.taint_gpu(kube, taint())
    with pytest.raises(KubeNotFoundError, match="does the cluster serve"):
        dt.gpu_taints(kube)
    assert dt.untaint_gpu(kube, "gpu-r01-n01", 3) is False
