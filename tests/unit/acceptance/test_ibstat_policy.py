"""Unreadable ibstat while sysfs shows the IB ports is never ignored silently: a warning
with the verdict (and in its evidence) by default; how much it weighs is thresholds.yaml's
``ibstat_unreadable`` (warn | fail | ignore)."""

from __future__ import annotations

import pytest
from test_judge import good_doc

from bringup.acceptance.judge import judge
from bringup.acceptance.judge_step import verdict_of
from bringup.acceptance.result import parse_result
from bringup.acceptance.thresholds import load_thresholds_file, thresholds_for
from bringup.netbox.adapter import NodeRecord
from bringup.sku import load_skus

H100 = "hgx-h100-80gb"
ERR = "no \"CA '...'\" block in the ibstat output"


@pytest.fixture(scope="module")
def th():
    return thresholds_for(load_skus()[H100])


def garbage_ibstat(th, error=ERR) -> dict:
    d = good_doc(th)
    for c in d["checks"]:
        if c["name"] == "network":
            c["data"] = {"ib_ports": {f"mlx5_{i}/1": {"state": "4: ACTIVE"} for i in range(8)}}
            if error:
                c["data"]["ibstat_error"] = error
    return d


def test_the_shipped_policy_is_warn():
    assert load_thresholds_file().defaults["ibstat_unreadable"] == "warn"


def test_unreadable_ibstat_is_a_warning_in_the_verdict_and_its_evidence(th):
    v = judge(parse_result(garbage_ibstat(th)), th)
    assert v.status == "pass"
    assert [w.code for w in v.warnings] == ["ibstat_unreadable"]
    assert ERR in v.warnings[0].message and "8 IB port" in v.warnings[0].message
    assert judge(parse_result(garbage_ibstat(th, error=None)), th).warnings == []


@pytest.mark.parametrize("policy,status,warned", [("fail", "fail", False), ("ignore", "pass", False),
                                                  ("warn", "pass", True)])
def test_the_policy_is_data(th, policy, status, warned):
    t = th.model_copy(update={"values": {**th.values, "ibstat_unreadable": policy}})
    v = judge(parse_result(garbage_ibstat(th)), t)
    assert v.status == status and bool(v.warnings) == warned
    if policy == "fail":
        assert v.reasons[0].code == "ibstat_unreadable"


def test_an_unknown_policy_is_not_a_pass(th, monkeypatch):
    t = th.model_copy(update={"values": {**th.values, "ibstat_unreadable": "warning"}})
    sku = load_skus()[H100]
    rec = NodeRecord(id=1, name="n1", site="s", rack="r", status="active", stage="burned_in", sku=sku, pool={},
                     macs={}, bmc_address="", address="", serial="", url="", tags=[], custom_fields={})
    import bringup.acceptance.thresholds as bt
    monkeypatch.setattr(bt, "thresholds_for", lambda s: t)
    v = verdict_of("n1", rec, {"document": garbage_ibstat(th)})
    assert v["status"] == "incomplete" and "ibstat_unreadable" in v["reasons"][0]["message"]


def test_the_judge_step_shows_the_warning_in_the_summary_and_journal(th, monkeypatch):
    from types import SimpleNamespace

    from bringup.acceptance.judge_step import judge as judge_step
    from bringup.errors import NetBoxNotFound
    sku = load_skus()[H100]
    rec = NodeRecord(id=1, name="n1", site="s", rack="r", status="active", stage="burned_in", sku=sku, pool={},
                     macs={}, bmc_address="", address="", serial="", url="", tags=[], custom_fields={})

    def get(node, fields, kind):
        if kind == "burnin":
            return {"document": garbage_ibstat(th)}
        raise NetBoxNotFound("none")
    # the judge step reads its peers from NetBox: a fleet of one here
    res = judge_step(SimpleNamespace(evidence=SimpleNamespace(get=get), netbox=SimpleNamespace(nodes=lambda **f: [])),
                     rec, {})
    assert res.ok
    assert "warning (network)" in res.fields["burnin_summary"] and ERR in res.fields["burnin_summary"]
    ev = res.evidence[0]
    assert ev.style == "warning" and "**warning**" in ev.summary
    assert ev.document["warnings"][0]["code"] == "ibstat_unreadable"
