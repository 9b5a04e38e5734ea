"""The blast-radius guard (bringup.service.blastradius): limits per pool and window, decisions in
order, repeat offenders, events from the stages frame, and the policy file's errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from bringup.errors import ConfigError
from bringup.resources import data_file
from bringup.service.blastradius import (
    Event,
    Request,
    decide,
    events_from_stages,
    followup,
    load_policy,
    pools_of,
    refusals,
)

AT = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def policy():
    return load_policy()


def pool(n: int, name: str = "train") -> dict[str, str]:
    return {f"{name}-{i:03d}": name for i in range(n)}


def quarantine(*nodes: str) -> list[Request]:
    return [Request(n, "quarantine", "xid 79") for n in nodes]


def test_the_shipped_policy_is_the_documented_default(policy):
    br, ro = policy.blast_radius, policy.repeat_offender
    assert (br.share_percent, br.min_nodes, br.window_minutes) == (10, 2, 60)
    assert (ro.count, ro.window_days) == (2, 30)


@pytest.mark.parametrize("size, limit", [(1, 2), (8, 2), (20, 2), (29, 2), (30, 3), (100, 10), (1000, 100)])
def test_limit_is_the_larger_of_the_share_rounded_down_and_the_minimum(policy, size, limit):
    assert policy.blast_radius.limit(size) == limit


def test_limit_is_exact_for_decimal_shares(policy):
    # 29 % of 100 as floats is 28.999...: the limit must still be 29
    br = policy.blast_radius.model_copy(update={"share_percent": 29, "min_nodes": 0})
    assert br.limit(100) == 29


def test_five_failing_at_once_in_twenty_allows_two_and_refuses_three(policy):
    nodes = pool(20)
    failing = list(nodes)[:5]
    ds = decide(nodes, [], quarantine(*failing), AT, policy)
    assert [d.node for d in ds] == failing  # in the order asked
    assert [d.allowed for d in ds] == [True, True, False, False, False]
    assert [d.acted for d in ds] == [0, 1, 2, 2, 2]
    for d in ds[2:]:
        assert (d.pool, d.size, d.limit, d.window) == ("train", 20, 2, timedelta(minutes=60))
        assert d.then is None
        assert "limit is 2" in d.message and "pool train" in d.message and "60 min" in d.message
        assert d.node in d.message and "2 nodes" in d.message
        assert "common cause" in d.remediation
    loud = refusals(ds)
    assert loud.startswith("the blast-radius guard refused 3 action(s)")
    assert all(n in loud for n in failing[2:]) and failing[0] not in loud


def test_all_allowed_means_no_refusal_text(policy):
    assert refusals(decide(pool(20), [], quarantine("train-000"), AT, policy)) == ""


def test_a_hundred_node_pool_allows_ten(policy):
    nodes = pool(100)
    ds = decide(nodes, [], quarantine(*list(nodes)[:12]), AT, policy)
    assert sum(d.allowed for d in ds) == 10
    assert [d.allowed for d in ds[10:]] == [False, False]
    assert ds[-1].limit == 10 and ds[-1].acted == 10


def test_the_window_slides(policy):
    nodes = pool(20)
    # two nodes went 61 and 59 minutes ago: only the recent one still counts
    events = [Event("train-010", AT - timedelta(minutes=61), "quarantine"),
              Event("train-011", AT - timedelta(minutes=59), "drain")]
    ds = decide(nodes, events, quarantine("train-000", "train-001"), AT, policy)
    assert [d.allowed for d in ds] == [True, False]
    assert ds[0].acted == 1
    # an hour later, none counts
    later = decide(nodes, events, quarantine("train-000", "train-001"), AT + timedelta(hours=1), policy)
    assert [d.allowed for d in later] == [True, True]


def test_an_event_exactly_one_window_ago_no_longer_counts(policy):
    nodes = pool(20)
    events = [Event("train-010", AT - timedelta(minutes=60), "quarantine"),
              Event("train-011", AT - timedelta(minutes=60), "quarantine")]
    assert decide(nodes, events, quarantine("train-000"), AT, policy)[0].allowed


def test_events_after_the_decision_time_do_not_count(policy):
    nodes = pool(20)
    events = [Event(f"train-01{i}", AT + timedelta(minutes=5), "quarantine") for i in range(2)]
    assert decide(nodes, events, quarantine("train-000"), AT, policy)[0].allowed


def test_pools_have_separate_budgets(policy):
    nodes = pool(20, "train") | pool(20, "infer")
    events = [Event("train-010", AT - timedelta(minutes=5), "quarantine"),
              Event("train-011", AT - timedelta(minutes=5), "quarantine")]
    ds = decide(nodes, events, quarantine("train-000", "infer-000"), AT, policy)
    assert [(d.pool, d.allowed) for d in ds] == [("train", False), ("infer", True)]


def test_a_node_counts_once(policy):
    nodes = pool(20)
    # drained, then quarantined in the same hour: one node out, one left in the budget
    events = [Event("train-010", AT - timedelta(minutes=30), "drain"),
              Event("train-010", AT - timedelta(minutes=10), "quarantine")]
    ds = decide(nodes, events, quarantine("train-000", "train-001"), AT, policy)
    assert [d.allowed for d in ds] == [True, False]
    # quarantining a node already counted takes nothing more, even at the limit
    ds = decide(nodes, events, quarantine("train-000", "train-010", "train-001"), AT, policy)
    assert [d.allowed for d in ds] == [True, True, False]
    assert "already taken out of service" in ds[1].message


def test_drains_share_the_budget(policy):
    ds = decide(pool(20), [], [Request("train-000", "drain"), Request("train-001", "drain"),
                               Request("train-002", "quarantine")], AT, policy)
    assert [d.allowed for d in ds] == [True, True, False]
    assert ds[0].then is None  # a drain is followed by nothing the guard decides


def test_a_node_in_no_pool_is_refused(policy):
    (d,) = decide(pool(20), [], quarantine("elsewhere-001"), AT, policy)
    assert not d.allowed and "no pool" in d.message and d.remediation


def test_a_naive_time_is_refused(policy):
    with pytest.raises(ValueError, match="time zone"):
        decide(pool(2), [], [], AT.replace(tzinfo=None), policy)
    with pytest.raises(ValueError, match="time zone"):
        Event("n", AT.replace(tzinfo=None), "drain")


def test_a_first_quarantine_is_followed_by_reburnin(policy):
    (d,) = decide(pool(20), [], quarantine("train-000"), AT, policy)
    assert d.allowed and d.then == "reburnin" and d.quarantines == 1


def test_a_repeat_offender_goes_to_inspection(policy):
    events = [Event("train-000", AT - timedelta(days=20), "quarantine")]
    (d,) = decide(pool(20), events, quarantine("train-000"), AT, policy)
    assert d.allowed and d.then == "inspection" and d.quarantines == 2


def test_an_old_quarantine_or_a_drain_makes_no_repeat_offender(policy):
    events = [Event("train-000", AT - timedelta(days=31), "quarantine"),
              Event("train-000", AT - timedelta(days=2), "drain"),
              Event("train-001", AT - timedelta(days=2), "quarantine")]
    (d,) = decide(pool(20), events, quarantine("train-000"), AT, policy)
    assert d.then == "reburnin" and d.quarantines == 1


def test_followup_of_a_node_already_quarantined(policy):
    once = [Event("n1", AT - timedelta(hours=1), "quarantine")]
    twice = [*once, Event("n1", AT - timedelta(days=29), "quarantine")]
    f = followup("n1", once, AT, policy)
    assert (f.then, f.quarantines) == ("reburnin", 1) and "re-burn-in" in f.message
    f = followup("n1", twice, AT, policy)
    assert (f.then, f.quarantines) == ("inspection", 2)
    assert f.message == "n1 was quarantined 2 times in 30 days: marked for hardware inspection instead of " \
                        "another re-burn-in"


def stages_frame(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["node", "stage", "start"])
    df["start"] = pd.to_datetime(df["start"], utc=True, format="ISO8601")
    df["end"] = df.groupby("node")["start"].shift(-1)
    return df


def test_events_from_the_stages_frame():
    df = stages_frame([
        ("n1", "active", "2025-06-01T10:00:00Z"),
        ("n1", "draining", "2025-06-01T11:00:00Z"),
        ("n1", "provisioned", "2025-06-01T11:05:00Z"),
        ("n1", "quarantined", "2025-06-01T11:40:00Z"),
        ("n1", "inspection", "2025-06-01T11:50:00Z"),
        ("n2", "quarantined", None),           # no time in the change log: no event
        ("n3", "judged", "2025-06-01T11:00:00Z"),   # a legacy name: not an event
        ("n3", "bogus", "2025-06-01T11:10:00Z"),    # a hand edit: not an event, not a crash
    ])
    events = events_from_stages(df)
    assert [(e.node, e.action, e.at) for e in events] == [
        ("n1", "drain", datetime(2025, 6, 1, 11, 0, tzinfo=UTC)),
        ("n1", "quarantine", datetime(2025, 6, 1, 11, 40, tzinfo=UTC))]
    assert "quarantined" in events[1].reason


def test_events_from_the_stages_frame_feed_the_guard(policy):
    nodes = pd.DataFrame({"node": ["a", "b", "c"], "pool": pd.Categorical(["p", "p", "p"])})
    df = stages_frame([("a", "quarantined", "2025-06-01T11:30:00Z"),
                       ("b", "draining", "2025-06-01T11:45:00Z")])
    ds = decide(pools_of(nodes), events_from_stages(df), quarantine("c"), AT, policy)
    assert pools_of(nodes) == {"a": "p", "b": "p", "c": "p"}
    assert not ds[0].allowed and ds[0].acted == 2 and ds[0].size == 3


def test_an_empty_stages_frame_has_no_events():
    assert events_from_stages(stages_frame([])) == []


def test_decision_as_dict_is_a_row(policy):
    (d,) = decide(pool(20), [], quarantine("train-000"), AT, policy)
    row = d.as_dict()
    assert row["node"] == "train-000" and row["limit"] == 2 and row["window min"] == 60
    assert row["then"] == "reburnin" and row["allowed"] is True


def bad(tmp_path, old: str, new: str) -> str:
    text = data_file("guard.yaml").read_text()
    assert text.count(old) == 1  # the edit lands where the test means it to
    path = tmp_path / "guard.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as exc:
        load_policy(path)
    return str(exc.value)


def test_an_unknown_key_is_named(tmp_path):
    msg = bad(tmp_path, "  min_nodes: 2", "  min_node: 2")
    assert "blast_radius.min_node" in msg and "blast_radius.min_nodes" in msg
    assert "guard.yaml:" in msg


@pytest.mark.parametrize("old, new, where", [
    ("share_percent: 10", "share_percent: 0", "blast_radius.share_percent"),
    ("share_percent: 10", "share_percent: 110", "blast_radius.share_percent"),
    ("window_minutes: 60", "window_minutes: -5", "blast_radius.window_minutes"),
    ("  count: 2", "  count: two", "repeat_offender.count"),
    ("window_days: 30", "window_days: 0", "repeat_offender.window_days"),
])
def test_a_bad_value_is_named(tmp_path, old, new, where):
    assert where in bad(tmp_path, old, new)


def test_a_text_with_an_unknown_field_is_named(tmp_path):
    msg = bad(tmp_path, "{acted} nodes of pool {pool}", "{acted} nodes of pool {pol}")
    assert "texts.refused" in msg and "{pol}" in msg


def test_a_missing_section_is_named(tmp_path):
    text = data_file("guard.yaml").read_text()
    path = tmp_path / "guard.yaml"
    path.write_text(text.split("repeat_offender:")[0].rsplit("\n#", 1)[0]
                    + "\ntexts:" + text.split("\ntexts:")[1])
    with pytest.raises(ConfigError, match="repeat_offender"):
        load_policy(path)
