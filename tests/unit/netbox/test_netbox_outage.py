"""NetBox going away mid-run loses nothing: writes ride out a bounded outage, a result
that still cannot be recorded is spooled on disk and the node held where it is, the next
run records the spooled result instead of redoing the step, and the fleet row is built
from what the run saw when NetBox cannot be read."""

from __future__ import annotations

import json
import stat
from types import SimpleNamespace

import pytest
from lifecycle_fakes import MemoryRecords

from bringup.errors import NetBoxUnavailable
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, State
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.records import NetBoxRecords
from bringup.netbox.spool import ResultSpooled, Spool

DOC = {"plan": {"checks": ["nccl"]}, "rc": 0, "document": {"checks": [{"name": "nccl", "status": "pass"}]}}


class FlakyRecords(MemoryRecords):
    """MemoryRecords whose writes fail while ``down`` (NetBox killed)."""

    down = False
    writes_down = False   # reads answer, writes do not

    def _check(self):
        if self.down or self.writes_down:
            raise NetBoxUnavailable("cannot reach NetBox: ConnectionError")

    def node(self, name):
        if self.down:
            raise NetBoxUnavailable("cannot reach NetBox: ConnectionError")
        return super().node(name)

    def write(self, node, **kw):
        self._check()
        return super().write(node, **kw)

    def journal(self, node, text, kind="info"):
        self._check()
        return super().journal(node, text, kind)

    def put_evidence(self, node, evidence):
        self._check()
        return super().put_evidence(node, evidence)


def _lifecycle(records, spool, calls):
    def step(name):
        def fn(node, params):
            calls.append(name)
            if name == "burn_in":
                records.down = params.get("kill_netbox", False)  # NetBox dies while the burn-in runs
                return StepResult(node=node.name, step=name, ok=True, summary="burned in",
                                  evidence=[Evidence(kind="burnin", document=DOC)])
            return StepResult(node=node.name, step=name, ok=True)
        return fn
    return Lifecycle(steps={n: step(n) for n in STEP_NAMES}, records=records, spool=spool)


def test_a_result_netbox_cannot_take_is_spooled_and_recorded_by_the_next_run_without_redoing_it(tmp_path):
    records, calls = FlakyRecords("n1"), []
    records.nodes["n1"].stage = State.PROVISIONED.value
    spool = Spool(tmp_path / "spool")
    lc = _lifecycle(records, spool, calls)
    with pytest.raises(ResultSpooled, match="burn_in result is kept") as err:
        lc.run_step("n1", State.PROVISIONED, "burn_in", {"kill_netbox": True})
    assert err.value.controller_fault and not err.value.transient   # held, never retried (no second burn-in)
    assert records.nodes["n1"].stage == "provisioned"                # not failed, not moved
    kept = spool.pending()
    assert len(kept) == 1 and kept[0].result.evidence[0].document == DOC
    assert stat.S_IMODE(kept[0].path.stat().st_mode) == 0o600
    assert stat.S_IMODE(spool.root.stat().st_mode) == 0o700

    records.down = False   # NetBox is back; the rerun
    res = lc.run_step("n1", State.PROVISIONED, "burn_in", {})
    assert calls == ["burn_in"]                       # recorded, not burned in again
    assert res.state == State.BURNED_IN.value
    assert records.evidence["n1"]["burnin"] == DOC
    assert spool.pending() == []


def test_the_spool_is_kept_when_netbox_is_still_down_at_the_rerun(tmp_path):
    records, calls = FlakyRecords("n1"), []
    records.nodes["n1"].stage = State.PROVISIONED.value
    spool = Spool(tmp_path / "spool")
    lc = _lifecycle(records, spool, calls)
    with pytest.raises(ResultSpooled):
        lc.run_step("n1", State.PROVISIONED, "burn_in", {"kill_netbox": True})
    records.down, records.writes_down = False, True
    with pytest.raises(ResultSpooled):
        lc.run_step("n1", State.PROVISIONED, "burn_in", {})
    assert calls == ["burn_in"] and len(spool.pending()) == 1


def test_a_broken_spool_file_is_set_aside_and_the_step_runs_again(tmp_path):
    spool = Spool(tmp_path)
    p = spool.put("n1", "provisioned", "burn_in", StepResult(node="n1", step="burn_in", ok=True), device=DEV1)
    p.write_text('{"node": "n1", "sta')
    assert spool.find("n1", "provisioned", "burn_in", device=DEV1) is None
    assert p.with_name(p.name + ".bad").exists()


DEV1 = "http://netbox.test/dcim/devices/1/"


def test_a_result_spooled_for_another_netboxs_node_of_the_same_name_is_not_replayed(tmp_path, caplog):
    """A controller serving two NetBoxes (or a device created again) spools a result of one
    ``n1``: the other ``n1`` runs its step itself, and the file is left for its own device."""
    records, calls = FlakyRecords("n1"), []
    records.nodes["n1"].stage = State.PROVISIONED.value
    spool = Spool(tmp_path / "spool")
    other = StepResult(node="n1", step="burn_in", ok=True, summary="burned in elsewhere",
                       evidence=[Evidence(kind="burnin", document={"elsewhere": True})])
    theirs = spool.put("n1", "provisioned", "burn_in", other, device="http://other-netbox:8000/dcim/devices/1/")
    lc = _lifecycle(records, spool, calls)
    with caplog.at_level("WARNING", logger="bringup.netbox.spool"):
        lc.run_step("n1", State.PROVISIONED, "burn_in", {})
    assert calls == ["burn_in"]                          # run here, not taken from the other NetBox's n1
    assert records.evidence["n1"]["burnin"] == DOC
    assert theirs.exists() and "not replayed" in caplog.text
    assert spool.find("n1", "provisioned", "burn_in", device="http://other-netbox:8000/dcim/devices/1/").path == theirs


def test_a_spooled_file_that_names_no_device_is_left_for_a_person(tmp_path, caplog):
    spool = Spool(tmp_path)
    p = spool.put("n1", "provisioned", "burn_in", StepResult(node="n1", step="burn_in", ok=True), device=DEV1)
    doc = json.loads(p.read_text())
    del doc["device"]                                     # as written before the spool kept it
    p.write_text(json.dumps(doc))
    with caplog.at_level("WARNING", logger="bringup.netbox.spool"):
        assert spool.find("n1", "provisioned", "burn_in", device=DEV1) is None
    assert p.exists() and "of no named NetBox device" in caplog.text
    with pytest.raises(ValueError, match="must name its NetBox device"):
        spool.put("n1", "provisioned", "burn_in", StepResult(node="n1", step="burn_in", ok=True), device="")


def test_recording_one_devices_result_forgets_only_that_devices_copies(tmp_path):
    spool = Spool(tmp_path)
    ok = StepResult(node="n1", step="burn_in", ok=True)
    mine = spool.put("n1", "provisioned", "burn_in", ok, device=DEV1)
    theirs = spool.put("n1", "provisioned", "burn_in", ok.model_copy(update={"summary": "x"}),
                       device="http://other-netbox:8000/dcim/devices/1/")
    spool.done(spool.find("n1", "provisioned", "burn_in", device=DEV1))
    assert not mine.exists() and theirs.exists()


def test_netbox_writes_pause_and_retry_through_a_short_outage_then_give_up():
    t = [0.0]
    fails = [3]

    def update_node(*a, **kw):
        if fails[0]:
            fails[0] -= 1
            raise NetBoxUnavailable("NetBox answered 503")

    ctx = SimpleNamespace(settings=SimpleNamespace(netbox_outage_s=30.0), netbox=SimpleNamespace(update_node=update_node))
    sleeps = []
    rec = NetBoxRecords(ctx, sleep=lambda s: (sleeps.append(s), t.__setitem__(0, t[0] + s)), clock=lambda: t[0])
    node = SimpleNamespace(id=1, custom_fields={}, stage="provisioned")
    rec.write(node, fields={"a": 1})
    assert sleeps == [1.0, 2.0, 4.0] and node.custom_fields == {"a": 1}
    fails[0] = 10_000
    with pytest.raises(NetBoxUnavailable):
        rec.write(node, fields={"b": 2})
    assert t[0] == pytest.approx(7.0 + 30.0)   # bounded: the outage budget, not forever


def test_the_fleet_row_comes_from_the_run_when_netbox_cannot_be_read(tmp_path):
    records = FlakyRecords("n1")
    lc = _lifecycle(records, Spool(tmp_path), [])
    records.down = True
    seen = [StepResult(node="n1", step="burn_in", ok=True, state="provisioned", figures={"gpus": 8})]
    row = lc.report("n1", known=seen)
    assert row.verdict == "held" and row.stage == "provisioned" and row.figures == {"gpus": 8}
    assert "NetBox could not be read" in row.reasons[0]
    with pytest.raises(NetBoxUnavailable):
        lc.report("n1")


def test_a_device_is_named_by_its_url_and_when_netbox_created_it():
    """A NetBox built again (a lab's, a restore into a new database) gives its devices the
    same ids at the same URL: the creation time tells its n1 from the old one's."""
    from bringup.lifecycle.engine import device_of
    url = "http://127.0.0.1:8000/dcim/devices/4/"
    old = SimpleNamespace(url=url, created="2026-12-07T06:40:01.5+00:00")
    new = SimpleNamespace(url=url, created="2026-12-07T07:32:20.1+00:00")
    assert device_of(old) != device_of(new) and device_of(old).startswith(url)
    assert device_of(SimpleNamespace(url=url)) == url       # a record read without it: the URL alone
