"""The burn-in's serial comparison on BMC serials that identify no GPU (issue #26): the
placeholder serials and board serials of tests/fixtures/redfish/gpu-serial-identity (built
from the DMTF Processor schema and NVIDIA's documentation, no public recording exists: see
its README) are a note, never a mismatch; real serials that differ still fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_judge_evidence import doc_with_serials

from bringup.acceptance.gpu_serials import compare, placeholder_pattern
from bringup.acceptance.judge import judge
from bringup.acceptance.result import parse_result
from bringup.acceptance.thresholds import SkuThresholds, thresholds_for
from bringup.sku import load_skus

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "redfish" / "gpu-serial-identity"
H100 = "hgx-h100-80gb"
#: serials NVML would report for four GPUs of their own (the tests' choice, not recorded)
NVML = ["1654824000201", "1654824000202", "1654824000203", "1654824000204"]


@pytest.fixture(scope="module")
def th() -> SkuThresholds:
    return thresholds_for(load_skus()[H100])


def bmc_serials(name: str) -> list[str | None]:
    """The GPUs' SerialNumber as discovery records them (custom field gpu_serials)."""
    tree = json.loads((FIX / name).read_text())
    return [d.get("SerialNumber") for d in tree.values() if d.get("ProcessorType") == "GPU"]


def codes(items) -> list[str]:
    return [i.code for i in items]


def test_the_fixtures_hold_what_their_readme_says():
    assert bmc_serials("built-placeholder-serials.json") == ["0000000000000"] * 4
    assert bmc_serials("built-board-serial-tray.json") == ["1654824000131"] * 2 + ["1654824000178"] * 2


def test_placeholder_bmc_serials_are_a_note_not_a_mismatch(th):
    v = judge(parse_result(doc_with_serials(th, NVML)), th, bmc_serials=bmc_serials("built-placeholder-serials.json"))
    assert v.status == "pass", v.text()
    (note,) = [n for n in v.notes if n.check == "inventory"]
    assert note.code == "gpu_serial_not_compared"
    assert "placeholder serial(s) '0000000000000'" in note.message and "not compared" in note.message


def test_a_board_serial_shared_by_two_gpus_is_a_note_not_a_mismatch(th):
    # NVML's serial for each GPU of its own (an HGX baseboard BMC that reports the board's)
    board = bmc_serials("built-board-serial-tray.json")
    v = judge(parse_result(doc_with_serials(th, NVML)), th, bmc_serials=board)
    assert v.status == "pass", v.text()
    (note,) = [n for n in v.notes if n.check == "inventory"]
    assert note.code == "gpu_serial_not_compared" and "1654824000131, 1654824000178" in note.message
    # NVML reporting the board's serial too (NVML's nvmlDeviceGetSerial is the board's): still a pass
    same = judge(parse_result(doc_with_serials(th, board)), th, bmc_serials=board)
    assert same.status == "pass" and codes(same.notes) == ["gpu_serial_not_compared"]


def test_gpus_the_bmc_gave_no_serial_are_not_compared(th):
    # the DMTF public-tower mockup's GPU Processors carry no SerialNumber (fixture README);
    # the judge step hands the custom field over as strings, so None arrives as "None"
    for missing in ([None] * 4, ["None"] * 4, [""] * 4):
        v = judge(parse_result(doc_with_serials(th, NVML)), th, bmc_serials=missing)
        assert v.status == "pass" and codes(v.notes) == ["gpu_serial_not_compared"], (missing, v.text())


def test_a_real_bmc_serial_that_nvml_lacks_still_fails_beside_placeholders(th):
    # the placeholder tray with one GPU's real serial recorded at discovery, then swapped
    bmc = bmc_serials("built-placeholder-serials.json")[:3] + ["1654824000999"]
    v = judge(parse_result(doc_with_serials(th, NVML)), th, bmc_serials=bmc)
    assert v.status == "fail"
    (r,) = v.reasons
    assert r.code == "gpu_serial_mismatch" and r.message.endswith("the BMC reported 1654824000999 that NVML does not")
    assert codes(v.notes) == ["gpu_serial_not_compared"] and "(1 real BMC serial(s) were)" in v.notes[0].message
    # the same serial present in NVML's list: nothing differs
    ok = judge(parse_result(doc_with_serials(th, [*NVML[:3], "1654824000999"])), th, bmc_serials=bmc)
    assert ok.status == "pass", ok.text()


def test_real_distinct_serials_that_differ_fail_as_before(th):
    v = judge(parse_result(doc_with_serials(th, NVML)), th, bmc_serials=[*NVML[:3], "1654824000999"])
    assert v.status == "fail" and codes(v.reasons) == ["gpu_serial_mismatch"] and v.notes == []
    assert "NVML reports 1654824000204" in v.reasons[0].message


def test_the_pattern_is_discoverys_own():
    from bringup.redfish.quirks import load_book
    assert placeholder_pattern() == load_book().defaults["gpu_serial_placeholder"]
    c = compare(["A", "B"], ["N/A", "not available"])
    assert c.placeholders == ["N/A", "not available"] and c.mismatch is None and c.compared == 0
