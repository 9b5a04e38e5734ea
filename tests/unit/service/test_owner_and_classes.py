"""Issue #27 items 1, 5, 6 on the service side: reconcile says who holds a node it keeps
cordoned; the health owner setting; only hardware findings outside a forced re-test make a
repeat offender, and each quarantine's class is journaled; the taint effect per class."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from bringup.errors import ConfigError
from bringup.kube.models import NodeState
from bringup.service import guard
from bringup.service.health import Signal, load_policy
from bringup.service.reconcile import HELD_BY, Target, holder_notes, reconcile
from bringup.service.watch_step import deferral, taint_effect
from bringup.settings import load_settings

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def ago(minutes: float) -> str:
    return (NOW - timedelta(minutes=minutes)).isoformat()


class Cluster:
    def __init__(self, **nodes: NodeState) -> None:
        self.nodes = nodes

    def node_state(self, name):
        return self.nodes.get(name) or NodeState(name=name, exists=False)


# --- item 1: who holds the node -------------------------------------------------------------------
def test_reconcile_keeps_a_hand_cordon_on_a_serving_node_and_names_its_holder():
    kube = Cluster(a1=NodeState(name="a1", exists=True, unschedulable=True),
                   a2=NodeState(name="a2", exists=True),
                   a3=NodeState(name="a3", exists=True, unschedulable=True,
                                labels={"k8saas.nvidia.com/cordon-by": "NVSentinel"}))
    rows = {r.node: r for r in reconcile(lambda: kube, [Target("a1", "active"), Target("a2", "active"),
                                                        Target("a3", "active")], held=True)}
    assert set(rows) == {"a1", "a3"}
    assert rows["a1"].action.startswith("none") and "a person or another system" in rows["a1"].holder
    assert rows["a3"].holder.startswith("NVSentinel") and rows["a3"].as_dict()["held by"] == rows["a3"].holder
    assert kube.nodes["a1"].unschedulable


def test_netbox_says_who_holds_a_serving_node_once_and_stops_when_it_is_released():
    @dataclass
    class Rec:
        name: str
        stage: str = "active"
        custom_fields: dict = field(default_factory=dict)
    kube = Cluster(a1=NodeState(name="a1", exists=True, unschedulable=True))
    rows = reconcile(lambda: kube, [Target("a1", "active")], held=True)
    a1 = Rec("a1")
    ((rec, reason),) = holder_notes([a1, Rec("q1", "quarantined")], rows)
    assert rec is a1 and reason.startswith(HELD_BY)
    a1.custom_fields["bringup_reason"] = reason
    assert holder_notes([a1], rows) == []                              # said once
    assert holder_notes([a1], []) == [(a1, "")]                        # released: the reason goes


def test_the_health_owner_setting_takes_bringup_or_nvsentinel_and_names_a_bad_value(tmp_path):
    base = "netbox_url: http://x\nnetbox_token_file: /t\n"
    (tmp_path / "ok.yaml").write_text(base + "health_owner: nvsentinel\n")
    assert load_settings(tmp_path / "ok.yaml").health_owner == "nvsentinel"
    (tmp_path / "bad.yaml").write_text(base + "health_owner: npd\n")
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path / "bad.yaml")
    problems = [line for line in str(err.value).splitlines()[1:] if line.strip()]
    assert len(problems) == 1 and "health_owner" in problems[0] and "nvsentinel" in problems[0]


def test_with_nvsentinel_as_owner_the_finding_is_recorded_and_said_not_acted_on():
    text = deferral("nvsentinel", [Signal("xid_fatal", "critical", "GPU 3: XID 79 since the last look")])
    assert "health owner is nvsentinel" in text and "does not cordon, taint or drain" in text and "XID 79" in text


# --- item 5: what counts towards inspection --------------------------------------------------------
@dataclass
class Rec:
    id: int
    name: str
    custom_fields: dict = field(default_factory=dict)


class NetBox:
    def __init__(self, changes, entries=()):
        self.changes, self.journaled, self.entries = changes, [], list(entries)

    def stage_changes(self, ids):
        return dict.fromkeys(ids, self.changes)

    def journal(self, node_id, comments, kind="info"):
        self.journaled.append(comments)

    def journal_entries(self, node_id):
        return self.entries


class Evidence:
    def __init__(self, reasons):
        self.reasons = reasons

    def has(self, fields, kind):
        return kind == "verdict"

    def get(self, node, fields, kind):
        return {"reasons": self.reasons}


LIFE = [(ago(60 * 24 * 20), "planned"), (ago(60 * 24 * 19), "active"), (ago(60 * 24 * 10), "quarantined"),
        (ago(60 * 24 * 9), "planned"), (ago(60 * 24 * 8), "active"), (ago(10), "quarantined")]


def ctx(reasons, changes=LIFE, entries=()):
    return SimpleNamespace(netbox=NetBox(changes, entries), evidence=Evidence(reasons))


def rec(reason):
    return Rec(1, "n1", {"bringup_reason": reason})


def test_a_second_hardware_quarantine_in_thirty_days_goes_to_inspection_and_its_class_is_journaled():
    c = ctx([{"code": "xid_fatal", "message": "XID 79 on GPU 2"}])
    assert "inspection" in guard.repeat_offender(c, rec("XID 79 on GPU 2"), at=NOW)
    assert c.netbox.journaled[0].startswith(guard.CLASS_HEAD + "hardware (counted)")


def test_driver_drift_is_software_and_never_sends_a_node_to_inspection():
    c = ctx([{"code": "driver_mismatch", "message": "driver 550.54 is not the pinned 550.90"}])
    assert guard.repeat_offender(c, rec("driver 550.54 is not the pinned 550.90"), at=NOW) is None
    assert "software (not counted)" in c.netbox.journaled[0] and "driver_mismatch" in c.netbox.journaled[0]


def test_a_forced_re_test_does_not_count():
    forced = [*LIFE[:3], (ago(60 * 24 * 9), "planned"), (ago(10), "quarantined")]   # never served again
    c = ctx([{"code": "xid_fatal", "message": "XID 79 on GPU 2"}], changes=forced)
    assert guard.repeat_offender(c, rec("XID 79 on GPU 2"), at=NOW) is None
    assert "forced re-test" in c.netbox.journaled[0]


def test_an_earlier_quarantine_journaled_as_not_counted_does_not_count():
    earlier = datetime.fromisoformat(LIFE[2][0]) + timedelta(seconds=5)
    entries = [{"comments": guard.CLASS_HEAD + "software (not counted)\n", "created": earlier.isoformat()}]
    c = ctx([{"code": "xid_fatal", "message": "XID 79 on GPU 2"}], entries=entries)
    assert guard.repeat_offender(c, rec("XID 79 on GPU 2"), at=NOW) is None


# --- item 6: the taint schedulers act on ------------------------------------------------------------
def test_the_policy_chooses_the_taint_effect_per_finding_class():
    assert load_policy().effect("hardware") == "NoExecute" and load_policy().effect("software") == "NoSchedule"
    hw = ctx([{"code": "ecc_uncorrectable", "message": "GPU 1: 3 uncorrectable"}])
    assert taint_effect(hw, rec("GPU 1: 3 uncorrectable")) == "NoExecute"
    sw = ctx([{"code": "driver_mismatch", "message": "driver drift"}])
    assert taint_effect(sw, rec("driver drift")) == "NoSchedule"
