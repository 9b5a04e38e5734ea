"""The blast-radius guard asked with NetBox's facts (bringup.service.guard)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from bringup.service import guard
from bringup.service.blastradius import Request

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def ago(minutes: float) -> str:
    return (NOW - timedelta(minutes=minutes)).isoformat()


@dataclass
class Rec:
    id: int
    name: str
    site: str = "east"
    pool: dict = field(default_factory=lambda: {"name": "train"})
    custom_fields: dict = field(default_factory=dict)


class FakeNetBox:
    def __init__(self, recs, changes):
        self.recs, self.changes, self.journaled = recs, changes, []

    def nodes(self, site=None, names=None, **_):
        return [r for r in self.recs if (site is None or r.site == site) and (names is None or r.name in names)]

    def stage_changes(self, ids):
        return {i: self.changes.get(i, []) for i in ids}

    def journal(self, node_id, comments, kind="info"):
        self.journaled.append((node_id, kind, comments))

    def journal_entries(self, node_id):
        return [{"comments": c, "kind": k, "created": NOW.isoformat()} for i, k, c in self.journaled if i == node_id]


class NoEvidence:
    def has(self, custom_fields, kind):
        return False


def ctx_with(recs, changes):
    return SimpleNamespace(netbox=FakeNetBox(recs, changes), evidence=NoEvidence())


COMMISSIONED = [(ago(600), "planned"), (ago(500), "active")]


def test_quarantines_at_commissioning_take_nothing_from_the_budget():
    s, q = guard.events_of("n1", [(ago(300), "planned"), (ago(30), "quarantined")])
    assert s == [] and len(q) == 1
    s, q = guard.events_of("n1", [*COMMISSIONED, (ago(30), "draining"), (ago(20), "provisioned"),
                                  (ago(10), "quarantined")])
    assert [e.action for e in s] == ["drain", "quarantine"] and len(q) == 1
    # a forced restart begins a new life: a quarantine after it never served
    s, _ = guard.events_of("n1", [*COMMISSIONED, (ago(40), "planned"), (ago(10), "quarantined")])
    assert s == []
    # a hand-edited stage NetBox holds is no event
    assert guard.events_of("n1", [(ago(5), "weird")]) == ([], [])


def test_five_nodes_failing_at_once_stop_at_the_limit_and_are_journaled():
    recs = [Rec(i, f"n{i}") for i in range(1, 21)]  # 20 nodes: limit max(2, 2) = 2
    ctx = ctx_with(recs, {r.id: COMMISSIONED for r in recs})
    asks = [Request(f"n{i}", "drain", "XID 79") for i in range(1, 6)]
    decisions = guard.ask(ctx, asks, at=NOW)
    assert [d.allowed for d in decisions] == [True, True, False, False, False]
    assert guard.record_refusals(ctx, decisions) == ["n3", "n4", "n5"]
    assert [k for _, k, _ in ctx.netbox.journaled] == ["warning"] * 3
    assert "refused" in ctx.netbox.journaled[0][2] and "XID 79" in ctx.netbox.journaled[0][2]


def test_earlier_drains_in_the_window_count_older_ones_do_not():
    recs = [Rec(i, f"n{i}") for i in range(1, 21)]
    changes = {r.id: COMMISSIONED for r in recs}
    changes[1] = [*COMMISSIONED, (ago(30), "draining")]
    changes[2] = [*COMMISSIONED, (ago(90), "draining")]
    decisions = guard.ask(ctx_with(recs, changes), [Request("n5", "drain"), Request("n6", "drain")], at=NOW)
    assert [d.allowed for d in decisions] == [True, False]
    assert decisions[1].acted == 2


def test_a_repeat_offender_goes_to_inspection_even_after_a_commissioning_quarantine():
    recs = [Rec(i, f"n{i}") for i in range(1, 21)]
    changes = {r.id: COMMISSIONED for r in recs}
    changes[3] = [(ago(3000), "planned"), (ago(2900), "quarantined"), (ago(2000), "planned"), (ago(1500), "active")]
    (d,) = guard.ask(ctx_with(recs, changes), [Request("n3", "quarantine")], at=NOW)
    assert d.allowed and d.then == "inspection" and d.quarantines == 2


def test_other_pools_and_sites_do_not_share_the_budget():
    recs = [Rec(i, f"n{i}") for i in range(1, 4)] + [Rec(10 + i, f"m{i}", pool={"name": "infer"}) for i in range(3)]
    changes = {r.id: [*COMMISSIONED, (ago(5), "draining")] for r in recs if r.name.startswith("m")}
    (d,) = guard.ask(ctx_with(recs, changes), [Request("n1", "drain")], at=NOW)
    assert d.allowed and d.pool == "train" and d.size == 3 and d.acted == 0


def test_the_second_quarantine_in_thirty_days_is_a_repeat_offence():
    rec = Rec(3, "n3")
    once = ctx_with([rec], {3: [*COMMISSIONED, (ago(10), "quarantined")]})
    assert guard.repeat_offender(once, rec, at=NOW) is None
    twice = ctx_with([rec], {3: [(ago(60 * 24 * 20), "quarantined"), (ago(60 * 24 * 19), "planned"),
                                 *COMMISSIONED, (ago(10), "quarantined")]})
    assert "inspection" in guard.repeat_offender(twice, rec, at=NOW)
    # older than the window: not counted
    old = ctx_with([rec], {3: [(ago(60 * 24 * 40), "quarantined"), *COMMISSIONED, (ago(10), "quarantined")]})
    assert guard.repeat_offender(old, rec, at=NOW) is None
