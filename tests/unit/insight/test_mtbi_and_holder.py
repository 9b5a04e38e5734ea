"""The report's time between incidents per node (MTBI, from the NetBox journal) and who holds
a node cordoned when it is not bringup (issue #27, items 1 and 5)."""

from __future__ import annotations

import math

import pandas as pd

from bringup.insight.fleetdata import JournalEntry, NodeHistory, build
from bringup.insight.fleetreport import HELD_BY, held_by, tables
from bringup.service.reconcile import HELD_BY as WRITTEN

AT = pd.Timestamp("2026-12-02T12:00:00Z")


def entry(i: int, at: str, text: str) -> JournalEntry:
    return JournalEntry(i, at, "danger", text)


def fleet() -> list[NodeHistory]:
    a = NodeHistory("a", site="s", rack="r1", sku="hgx-h100-80gb", gpus=8, stage="quarantined", journal=[
        entry(1, "2026-11-01T00:00:00Z", "## Quarantined in state burned_in\n\n- XID 79\n"),
        entry(2, "2026-11-02T00:00:00Z", "Held in state provisioned: waiting"),            # not an incident
        entry(3, "2026-11-03T00:00:00Z", "## Health watch: taken out of service for re-burn-in\n\n- ECC\n"),
        entry(4, "2026-11-06T00:00:00Z", "## Quarantined in state burned_in\n\n- ECC\n")])
    b = NodeHistory("b", site="s", rack="r1", sku="hgx-h100-80gb", gpus=8, stage="active",
                    reason=WRITTEN + "a person or another system (cordoned with no cordon-by mark)",
                    journal=[entry(5, "2026-11-01T00:00:00Z", "## Quarantined in state burned_in\n\n- x\n")])
    return [a, b]


def test_the_report_shows_incidents_and_the_mean_time_between_them_per_node():
    fd = build(fleet())
    assert list(fd.incidents["what"]) == ["quarantined", "health watch", "quarantined", "quarantined"]
    nodes = tables(fd, at=AT, gpu_hour_usd=2.0).nodes.set_index("node")
    assert nodes.loc["a", "incidents"] == 3 and nodes.loc["a", "mtbi_h"] == 60.0    # gaps of 48 h and 72 h
    assert nodes.loc["b", "incidents"] == 1 and math.isnan(nodes.loc["b", "mtbi_h"])  # one incident: no gap yet


def test_the_report_names_who_holds_a_node_bringup_did_not_cordon():
    nodes = tables(build(fleet()), at=AT, gpu_hour_usd=2.0).nodes.set_index("node")
    assert nodes.loc["b", "held_by"].startswith("a person or another system") and nodes.loc["a", "held_by"] == ""
    assert HELD_BY == WRITTEN and held_by("quarantined twice") == ""
