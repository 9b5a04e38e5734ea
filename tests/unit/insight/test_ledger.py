"""bringup.insight.ledger: the GPU-hours arithmetic, checked against hours worked out by hand
(query time T0 + 24 h; every node 8 GPUs unless said; 2 $ per GPU-hour)."""

from __future__ import annotations

import math
from datetime import timedelta

import pandas as pd
import pytest
from fleet_fixtures import T0, history

from bringup.errors import ConfigError
from bringup.insight.fleetdata import build
from bringup.insight.ledger import intervals, load_accounts, node_ledger, pool_ledger
from bringup.settings import Settings

AT = pd.Timestamp(T0 + timedelta(hours=24))

FLEET = [
    # served from hour 6; a drain planned for hour 30 is after the query time
    history("a", steps=((0, "planned"), (1, "discovered"), (2, "provisioned"), (5, "burned_in"),
                        (5.5, "validating"), (6, "active"), (30, "draining"))),
    # still burning in at the query time
    history("b", steps=((0, "planned"), (20, "discovered"), (22, "provisioned")), stage="provisioned"),
    # quarantined after its first burn-in, forced back to planned, re-burned, admitted
    history("c", steps=((0, "planned"), (1, "discovered"), (2, "provisioned"), (4, "burned_in"),
                        (4.5, "quarantined"), (10, "planned"), (11, "discovered"), (12, "provisioned"),
                        (14, "burned_in"), (14.5, "validating"), (15, "active"))),
    # no history at all
    history("d", stage="planned"),
    # another pool, 4 GPUs
    history("e", steps=((0, "planned"), (12, "active")), pool="inference", gpus=4),
]


@pytest.fixture(scope="module")
def ledger():
    fd = build(FLEET)
    return node_ledger(fd.nodes, fd.stages, AT, gpu_hour_usd=2.0)


def test_hours_per_account(ledger):
    got = ledger[["waiting_h", "burnin_h", "quarantine_h", "serving_h"]].to_dict("index")
    assert got["a"] == {"waiting_h": 2.5, "burnin_h": 3.5, "quarantine_h": 0.0, "serving_h": 18.0}
    assert got["b"] == {"waiting_h": 22.0, "burnin_h": 2.0, "quarantine_h": 0.0, "serving_h": 0.0}
    assert got["c"] == {"waiting_h": 4.5, "burnin_h": 5.0, "quarantine_h": 5.5, "serving_h": 9.0}
    assert got["d"] == {"waiting_h": 0.0, "burnin_h": 0.0, "quarantine_h": 0.0, "serving_h": 0.0}
    assert got["e"] == {"waiting_h": 12.0, "burnin_h": 0.0, "quarantine_h": 0.0, "serving_h": 12.0}


def test_gpu_hours_failed_runs_and_time_to_serve(ledger):
    assert ledger["gpu_h"].to_dict() == {"a": 192.0, "b": 192.0, "c": 192.0, "d": 0.0, "e": 96.0}
    assert ledger["bringup_gpu_h"].to_dict() == {"a": 48.0, "b": 192.0, "c": 120.0, "d": 0.0, "e": 48.0}
    # only c's first burn-in (provisioned 2-4, burned_in 4-4.5) ended in quarantine: 2.5 h x 8
    assert ledger["failed_burnin_gpu_h"].to_dict() == {"a": 0.0, "b": 0.0, "c": 20.0, "d": 0.0, "e": 0.0}
    p2s = ledger["planned_to_serving_h"]
    assert p2s["a"] == 6.0 and p2s["c"] == 15.0 and p2s["e"] == 12.0  # c: the whole way, failed try included
    assert math.isnan(p2s["b"]) and math.isnan(p2s["d"])
    assert ledger["accepted"].to_dict() == {"a": True, "b": False, "c": True, "d": False, "e": True}
    assert ledger.loc["c", "total_cost_usd"] == 384.0 and ledger.loc["c", "bringup_cost_usd"] == 240.0


def test_pools_and_cost_per_accepted_node(ledger):
    pools = pool_ledger(ledger)
    assert list(pools.index) == ["inference", "training", "all"]
    tr = pools.loc["training"]
    assert (tr["nodes"], tr["accepted"]) == (4, 2)
    assert tr["gpu_h"] == 576.0 and tr["total_cost_usd"] == 1152.0
    assert tr["cost_per_accepted_usd"] == 576.0  # not the 2 x 27 serving hours x 8 x 2 $ = 864 $ of a and c
    assert tr["bringup_gpu_h"] == 360.0 and tr["bringup_cost_usd"] == 720.0
    assert tr["failed_burnin_gpu_h"] == 20.0 and tr["planned_to_serving_h"] == 10.5
    assert pools.loc["inference", "cost_per_accepted_usd"] == 192.0
    everyone = pools.loc["all"]
    assert everyone["total_cost_usd"] == 1344.0 and everyone["accepted"] == 3 and everyone["cost_per_accepted_usd"] == 448.0


def test_pool_with_nobody_accepted_has_no_cost_per_node_but_its_cost():
    fd = build([history("b", steps=((0, "planned"), (22, "provisioned")))])
    pools = pool_ledger(node_ledger(fd.nodes, fd.stages, AT, gpu_hour_usd=1.0))
    assert pools.loc["training", "total_cost_usd"] == 192.0
    assert math.isnan(pools.loc["training", "cost_per_accepted_usd"])


def test_stays_are_cut_at_the_query_time():
    fd = build(FLEET[:1])
    iv = intervals(fd.stages, pd.Timestamp(T0 + timedelta(hours=3)))
    assert list(zip(iv["stage"], iv["hours"], strict=True)) == [("planned", 1.0), ("discovered", 1.0),
                                                                 ("provisioned", 1.0)]
    assert iv["end"].max() == pd.Timestamp(T0 + timedelta(hours=3))
    ledger = node_ledger(fd.nodes, fd.stages, pd.Timestamp(T0 + timedelta(hours=3)), gpu_hour_usd=2.0)
    assert ledger.loc["a", "burnin_h"] == 1.0 and not ledger.loc["a", "accepted"]


def test_legacy_and_unknown_stage_names():
    fd = build([history("x", steps=((0, "planned"), (1, "judged"), (2, "admitted"), (3, "weird")))])
    row = node_ledger(fd.nodes, fd.stages, pd.Timestamp(T0 + timedelta(hours=5)), gpu_hour_usd=2.0).loc["x"]
    assert (row["burnin_h"], row["serving_h"], row["unknown_h"]) == (1.0, 1.0, 2.0)
    assert row["bringup_gpu_h"] == 32.0  # an unknown stage is not serving


def test_settings_default_price():
    s = Settings(netbox_url="http://nb", netbox_token_file="/dev/null")
    assert s.gpu_hour_usd == 2.0
    with pytest.raises(ValueError):
        Settings(netbox_url="http://nb", netbox_token_file="/dev/null", gpu_hour_usd=-1)


def test_shipped_accounts_cover_every_stage():
    acc = load_accounts()
    assert acc["provisioned"] == "burnin" and acc["inspection"] == "quarantine" and acc["active"] == "serving"


@pytest.mark.parametrize("text, message", [
    (("accounts: {burnin: [provisioned, burned_in, fabric], quarantine: [quarantined, inspection], serving: [active],"
     " waiting: [planned, discovered, validating]}"), "no account for stages ['draining']"),
    (("accounts: {burnin: [provisioned, burned_in, fabric, active], quarantine: [quarantined, inspection],"
     " serving: [active], waiting: [planned, discovered, validating, draining]}"), "is in accounts burnin and serving"),
    ("accounts: {burnin: [], quarantine: [], serving: []}", "accounts are"),
])
def test_bad_accounts_file(tmp_path, text, message):
    path = tmp_path / "ledger.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as exc:
        load_accounts(path)
    assert message in str(exc.value)
