"""The normalised cost in the report: each term with its source, accepted units only from a
passed pool acceptance."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
from fleet_fixtures import T0, history

from bringup.insight.fleetdata import build
from bringup.insight.fleetreport import tables

FLEET = [history("a", steps=((0, "planned"), (2, "provisioned"), (4, "quarantined"))),
         history("b", steps=((0, "planned"), (2, "provisioned"), (4, "active")))]
AT = pd.Timestamp(T0 + timedelta(hours=10))


def _rows(accepted):
    t = tables(build(FLEET), at=AT, gpu_hour_usd=3.0, accepted=accepted)
    return {r.term: (r.value, r.source) for r in t.unitcost.itertuples() if r.pool == "training"}


def test_the_report_divides_every_term_by_the_accepted_units():
    rows = _rows({"training": (1000.0, "accept-training-r1 (pass)")})
    assert [k for k in rows][:7] == ["compute", "network", "storage", "support", "idle", "failed runs", "operations"]
    assert rows["total $"][0] == 480.0 and rows["compute"][0] == 144.0
    assert rows["accepted units (M samples)"][0] == 21.6 and "accept-training-r1" in rows["accepted units (M samples)"][1]
    assert abs(rows["$ per M accepted samples"][0] - 480 / 21.6) < 1e-9
    assert "ledger quarantine + failed burn-in 64.0 GPU-h" in rows["failed runs"][1]


def test_without_a_passed_acceptance_the_units_are_unknown():
    rows = _rows(None)
    assert pd.isna(rows["accepted units (M samples)"][0]) and pd.isna(rows["$ per M accepted samples"][0])
    assert "no passed pool acceptance" in rows["accepted units (M samples)"][1]
