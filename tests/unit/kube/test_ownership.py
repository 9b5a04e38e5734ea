"""One owner at a time (issue #27, item 1): every cordon bringup places carries who, why and
when; bringup never lifts a cordon it did not place (a hand cordon, NVSentinel's) and says
who holds the node; the quarantine taint's effect is the caller's choice."""

from __future__ import annotations

import copy

import pytest
from kubernetes import client as k8s

from bringup.admission.labels import QUARANTINE_KEY, Taint
from bringup.errors import ConfigError
from bringup.kube import KubeAdapter
from bringup.kube.models import parse_node
from bringup.kube.ownership import CORDON_BY, CORDON_REASON, CORDON_TIMESTAMP, OWNER, holder


def _merge(into: dict, patch: dict) -> None:
    """A strategic merge patch as the API server applies it to a node (maps merged, None
    deletes, lists replaced)."""
    for key, value in patch.items():
        if value is None:
            into.pop(key, None)
        elif isinstance(value, dict):
            _merge(into.setdefault(key, {}), value)
        else:
            into[key] = value


class Api(KubeAdapter):
    """One node held in memory; Events kept as (reason, message)."""

    def __init__(self, node: dict) -> None:
        super().__init__(k8s.ApiClient())
        self.node, self.notes = node, []

    def _read_node(self, name):
        return copy.deepcopy(self.node)

    def _patch_node(self, name, patch):
        patch = copy.deepcopy(patch)
        patch.get("metadata", {}).pop("resourceVersion", None)
        _merge(self.node, patch)
        return parse_node(self.node)

    def _note(self, name, reason, message, warning=False):
        self.notes.append((reason, message))


def node(unschedulable=False, labels=None, annotations=None, taints=None) -> dict:
    return {"metadata": {"name": "n1", "resourceVersion": "1", "labels": dict(labels or {}),
                         "annotations": dict(annotations or {})},
            "spec": {"unschedulable": unschedulable or None, "taints": list(taints or []) or None}}


def test_a_cordon_bringup_places_says_who_why_and_when_and_bringup_lifts_it():
    api = Api(node())
    api.cordon("n1", "draining")
    ann = api.node["metadata"]["annotations"]
    assert api.node["spec"]["unschedulable"] is True
    assert ann[CORDON_BY] == OWNER and ann[CORDON_REASON] == "draining" and ann[CORDON_TIMESTAMP].endswith("+00:00")
    api.uncordon("n1", "done")
    assert "unschedulable" not in api.node["spec"] and CORDON_BY not in api.node["metadata"]["annotations"]


def test_a_hand_cordon_is_never_lifted_and_its_holder_is_said():
    api = Api(node(unschedulable=True))                      # kubectl cordon n1
    api.uncordon("n1")
    assert api.node["spec"]["unschedulable"] is True
    assert api.notes[-1][0] == "CordonKept" and "a person or another system" in api.notes[-1][1]
    api.cordon("n1", "draining")                             # bringup adds no mark to a cordon it did not place
    assert CORDON_BY not in api.node["metadata"]["annotations"]


def test_admission_keeps_a_cordon_someone_else_holds_and_lifts_its_own():
    held = Api(node(unschedulable=True, labels={"k8saas.nvidia.com/cordon-by": "NVSentinel",
                                                "k8saas.nvidia.com/cordon-reason": "GpuXidError"}))
    state = held.admit("n1", {"bringup.io/pool": "train"})
    assert state.unschedulable
    assert held.notes[-1][0] == "CordonKept" and "NVSentinel" in held.notes[-1][1]
    assert holder(held.node).startswith("NVSentinel (k8saas.nvidia.com/cordon-by): GpuXidError")
    ours = Api(node())
    ours.quarantine("n1", "XID 79 on GPU 2: fell off the bus")
    assert ours.admit("n1", {"bringup.io/pool": "train"}).unschedulable is False
    assert ours.notes[-1][0] == "Admitted"


def test_a_cordon_from_before_the_marks_with_our_taint_is_ours():
    taint = {"key": QUARANTINE_KEY, "value": "xid-79", "effect": "NoSchedule"}
    assert holder(node(unschedulable=True, taints=[taint])) == OWNER
    assert holder(node(unschedulable=True, taints=[{"key": "other.io/x", "effect": "NoSchedule"}])) != OWNER
    assert holder(node()) == ""


def test_the_quarantine_taint_takes_the_effect_asked_for_and_refuses_another():
    api = Api(node())
    api.quarantine("n1", "ecc: uncorrectable", effect="NoExecute")
    (taint,) = api.node["spec"]["taints"]
    assert Taint(**taint).effect == "NoExecute" and api.node["metadata"]["annotations"][CORDON_BY] == OWNER
    with pytest.raises(ConfigError, match="PreferNoSchedule"):
        api.quarantine("n1", "x", effect="PreferNoSchedule")


def test_bringup_tainting_a_hand_cordoned_node_does_not_make_the_cordon_its_own():
    api = Api(node(unschedulable=True))                      # kubectl cordon n1, then a health finding
    api.quarantine("n1", "XID 79 on GPU 2: fell off the bus")
    assert holder(api.node).startswith("a person or another system")
    assert api.admit("n1", {"bringup.io/pool": "train"}).unschedulable     # re-admitted: still theirs
    api.node["spec"].pop("unschedulable")                                  # the operator uncordons
    api.quarantine("n1", "ECC")                                            # bringup's own cordon now
    assert holder(api.node) == OWNER and api.admit("n1", {"bringup.io/pool": "train"}).unschedulable is False
