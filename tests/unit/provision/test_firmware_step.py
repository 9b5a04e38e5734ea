"""The ``firmware`` step on the in-process simulator: drift found and recorded; with updates
allowed, fixed and re-checked; critical drift left quarantines with component, found, wanted."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "redfish"))
from inproc import SKUS, client, sim

from bringup.netbox.adapter import NodeRecord
from bringup.provision.firmware_step import firmware

DRIFT = "[{kind: firmware_drift, attribute: GPU2_VBIOS, value: 96.00.61.00.01}, " \
        "{kind: firmware_drift, attribute: CPLD, value: 0.6.9}]"


def ctx_for(svc, clock, monkeypatch, update: bool = False):
    @contextmanager
    def bmc(address, timeout=10.0):
        b = client(svc, clock, monkeypatch, for_inventory=False)
        try:
            yield b
        finally:
            b.close()
    return SimpleNamespace(bmc=bmc, settings=SimpleNamespace(firmware_update=update))


def record(sku: str = "hgx-h100-80gb") -> NodeRecord:
    return NodeRecord(id=1, name="n1", site="s", rack="r1", status="planned", stage="discovered", sku=SKUS[sku],
                      pool={}, macs={}, bmc_address="127.0.0.9", address="127.0.0.8", serial="x",
                      custom_fields={}, url="", tags=[])


def test_a_healthy_node_passes_and_the_check_is_evidence(monkeypatch):
    svc, clock = sim("supermicro-hgx")
    r = firmware(ctx_for(svc, clock, monkeypatch), record(), {})
    assert r.ok and r.evidence[0].kind == "firmware" and r.evidence[0].style == "success"
    doc = r.evidence[0].document
    assert doc["counts"] == {"ok": 3 + 8 + 4 + 8} and doc["updates"] == []


def test_drift_without_updates_quarantines_naming_component_found_and_wanted(monkeypatch):
    svc, clock = sim("dell-idrac", DRIFT)
    r = firmware(ctx_for(svc, clock, monkeypatch), record(), {})
    assert not r.ok and r.reasons == [
        ("firmware GPU VBIOS (GPU2_VBIOS): found 96.00.61.00.01, wanted >= 96.00.99.00.01 "
         "(96.00.61.00.01 is older than the minimum 96.00.99.00.01)")]
    cpld = [f for f in r.evidence[0].document["findings"] if f["component"] == "CPLD"]
    assert cpld[0]["status"] == "drift" and cpld[0]["severity"] == "warning"     # recorded, not blocking
    assert svc.state.firmware["GPU2_VBIOS"] == "96.00.61.00.01"                  # nothing was touched


def test_with_updates_allowed_the_drift_is_fixed_and_checked_again(monkeypatch):
    svc, clock = sim("supermicro-hgx", DRIFT)
    r = firmware(ctx_for(svc, clock, monkeypatch), record(), {"firmware_update": True})
    assert r.ok, r.reasons
    doc = r.evidence[0].document
    [upd] = doc["updates"]
    assert upd["ok"] and upd["targets"] == ["/redfish/v1/UpdateService/FirmwareInventory/GPU2_VBIOS"]
    assert upd["resets"] == 1 and upd["after"] == {upd["targets"][0]: "96.00.99.00.01"}
    before = {f["member"]: f["status"] for f in doc["before"]}
    assert before["GPU2_VBIOS"] == "drift"
    assert r.evidence[0].style == "warning" and "1 update(s)" in r.summary    # the CPLD warning stays (no image)


def test_settings_allow_updates_when_the_run_does_not_say(monkeypatch):
    svc, clock = sim("bmcsim", DRIFT)
    assert firmware(ctx_for(svc, clock, monkeypatch, update=True), record(), {}).ok
    svc, clock = sim("bmcsim", DRIFT)
    assert not firmware(ctx_for(svc, clock, monkeypatch, update=True), record(), {"firmware_update": False}).ok


def test_the_lifecycle_runs_firmware_first_in_discovered_and_quarantines_on_critical_drift(monkeypatch):
    from lifecycle_fakes import MemoryRecords

    from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, State
    from bringup.lifecycle.results import StepResult

    def with_firmware(update: bool):
        svc, clock = sim("supermicro-hgx", DRIFT)
        ctx = ctx_for(svc, clock, monkeypatch)
        fns = {n: (lambda node, p, n=n: StepResult(node=node.name, step=n, ok=True)) for n in STEP_NAMES}
        fns["firmware"] = lambda node, p: firmware(ctx, record(), {**p, "firmware_update": update})
        rec = MemoryRecords("n1")
        rec.nodes["n1"].stage = "discovered"
        return Lifecycle(fns, rec), rec

    lc, rec = with_firmware(update=False)
    assert lc.pending_steps("n1", State.DISCOVERED)[0].name == "firmware"
    r = lc.run_step("n1", State.DISCOVERED, "firmware")
    assert r.state == "quarantined" and "GPU2_VBIOS" in rec.nodes["n1"].custom_fields["bringup_reason"]
    assert rec.evidence["n1"]["firmware"]["findings"]
    lc, rec = with_firmware(update=True)
    assert lc.run_step("n1", State.DISCOVERED, "firmware").state == "discovered"
    assert [s.name for s in lc.pending_steps("n1", State.DISCOVERED)] == ["bios", "install", "configure"]
