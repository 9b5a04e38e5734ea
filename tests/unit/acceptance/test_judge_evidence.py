"""The judge on what a run leaves besides its checks: partial documents (a run stopped by
its time budget), the BMC's GPU serials against NVML's, lifetime ECC counts and their
trend, the new gpu-burn and nccl rules; and the plan's time budget."""

from __future__ import annotations

import copy

import pytest
from test_judge import GOOD_METRICS, good_doc, with_check

from bringup.acceptance.judge import ecc_aggregate, judge
from bringup.acceptance.judge_step import verdict_of
from bringup.acceptance.plan import CHECK_SLACK_S, check_budgets, make_plan, manifest_versions, plan_budget_s
from bringup.acceptance.result import parse_result
from bringup.acceptance.thresholds import SkuThresholds, thresholds_for
from bringup.netbox.adapter import NodeRecord
from bringup.resources import data_dir
from bringup.sku import load_skus
from bringup.yamlio import load_file

H100 = "hgx-h100-80gb"
SERIALS = [f"16540000000{i:02d}" for i in range(8)]


@pytest.fixture(scope="module")
def th() -> SkuThresholds:
    return thresholds_for(load_skus()[H100])


def doc_with_serials(th: SkuThresholds, serials: list[str]) -> dict:
    d = good_doc(th)
    for c in d["checks"]:
        if c["name"] == "inventory":
            c["data"] = {"gpus": [{"index": i, "serial": s} for i, s in enumerate(serials)]}
        if c["name"] == "ecc":
            c["data"] = {"gpus": [{"gpu": i, "uncorrected_aggregate": 0, "corrected_aggregate": 10}
                                  for i in range(len(serials))]}
    return d


def partial(th: SkuThresholds, running: str, done: int) -> dict:
    d = good_doc(th)
    names = [c["name"] for c in d["checks"]]
    d["checks"] = d["checks"][:done]
    d.update({"partial": True, "running": running,
              "pending": [n for n in names[done:] if n != running], "finished": ""})
    return d


# --- partial documents -----------------------------------------------------------------------
def test_partial_document_is_incomplete_naming_the_unfinished_step(th):
    d = partial(th, "dcgm", 5)
    d["stopped"] = "signal SIGTERM during dcgm"
    v = judge(parse_result(d), th)
    assert v.status == "incomplete"
    first = v.reasons[0]
    assert first.code == "unfinished" and first.check == "dcgm"
    assert "stopped during dcgm (signal SIGTERM during dcgm)" in first.message and "5 checks finished" in first.message
    reached = {r.check for r in v.reasons if r.code == "not_reached"}
    assert reached == {"gpu_burn", "nccl", "cpu_mem", "pcie", "clocks", "xid", "disk"}
    assert not [r for r in v.reasons if r.code == "missing_check"]


def test_partial_document_with_a_failed_check_fails(th):
    d = partial(th, "nccl", 7)
    d["checks"][6]["status"] = "fail"  # gpu_burn found a faulty GPU before the kill
    d["checks"][6]["findings"] = [{"code": "gpuburn_faulty", "message": "GPU 3: FAULTY", "severity": "fail", "gpu": 3}]
    v = judge(parse_result(d), th)
    assert v.status == "fail" and v.reasons[0].code == "gpuburn_faulty"
    assert "unfinished" in [r.code for r in v.reasons]


def test_partial_document_killed_between_checks_names_the_next(th):
    d = partial(th, "x", 3)
    d["running"] = None
    v = judge(parse_result(d), th)
    assert v.reasons[0].code == "unfinished" and v.reasons[0].check == "nvlink"


# --- GPU serials -----------------------------------------------------------------------------
def test_same_serials_in_another_order_pass(th):
    d = doc_with_serials(th, SERIALS)
    v = judge(parse_result(d), th, bmc_serials=list(reversed(SERIALS)))
    assert v.status == "pass", v.text()


def test_swapped_gpu_is_a_finding_with_severity_from_data(th):
    swapped = SERIALS[:5] + ["1654999999999"] + SERIALS[6:]
    d = doc_with_serials(th, swapped)
    v = judge(parse_result(d), th, bmc_serials=SERIALS)
    assert v.status == "fail"
    (r,) = v.reasons
    assert r.code == "gpu_serial_mismatch" and "1654999999999" in r.message and SERIALS[5] in r.message
    for severity, status in (("incomplete", "incomplete"), ("info", "pass")):
        soft = SkuThresholds(sku=th.sku, values={**th.values, "gpu_serial_mismatch": severity}, rules=th.rules,
                             required_checks=th.required_checks)
        v = judge(parse_result(d), soft, bmc_serials=SERIALS)
        assert v.status == status
        if severity == "info":
            assert [n.code for n in v.notes] == ["gpu_serial_mismatch"]


def test_stage_passes_netbox_serials_to_the_judge(th):
    sku = load_skus()[H100]
    rec = NodeRecord(id=1, name="n1", site="s", rack="r", status="active", stage="burned_in", sku=sku, pool={},
                     macs={}, bmc_address="", address="", serial="", url="", tags=[],
                     custom_fields={"gpu_serials": SERIALS[:7] + ["1654000000077"]})
    verdict = verdict_of("n1", rec, {"document": doc_with_serials(th, SERIALS)})
    assert verdict["status"] == "fail" and verdict["reasons"][0]["code"] == "gpu_serial_mismatch"
    assert verdict["ecc_aggregate"]["corrected"] == [10] * 8
    rec.custom_fields["gpu_serials"] = list(SERIALS)
    assert verdict_of("n1", rec, {"document": doc_with_serials(th, SERIALS)})["status"] == "pass"


# --- ECC lifetime counts and trend --------------------------------------------------------------
def test_lifetime_ecc_above_the_limit_fails_and_below_is_reported_only(th):
    over = with_check(good_doc(th), "ecc", metrics={"lifetime_limit_gpus": 1, "uncorrected_aggregate": 25_000_000})
    v = judge(parse_result(over), th)
    assert v.status == "fail" and v.reasons[0].code == "ecc_lifetime_limit"
    under = with_check(good_doc(th), "ecc", metrics={"uncorrected_aggregate": 3},
                       findings=[{"code": "ecc_aggregate", "message": "GPU 2: 3 uncorrectable ECC errors over its "
                                  "lifetime", "severity": "info", "gpu": 2}])
    assert judge(parse_result(under), th).status == "pass"
    assert th.values["max_ecc_uncorrected_aggregate"] == 20_000_000  # Azure NHC, cited in the YAML


def test_remapped_rows_above_the_limit_fail(th):
    d = with_check(good_doc(th), "ecc", metrics={"remapped_rows_uncorrectable_max": 513})
    v = judge(parse_result(d), th)
    assert v.status == "fail" and v.reasons[0].code == "row_remap_high"


def test_lifetime_counts_that_grew_since_the_previous_burnin_are_noted(th):
    d = doc_with_serials(th, SERIALS)
    d["checks"][[c["name"] for c in d["checks"]].index("ecc")]["data"]["gpus"][4]["uncorrected_aggregate"] = 2
    result = parse_result(d)
    assert ecc_aggregate(result)["uncorrected"][4] == 2
    v = judge(result, th, previous_ecc={"uncorrected": [0] * 8, "corrected": [10] * 8})
    assert v.status == "pass"
    grew = "GPU 4: lifetime uncorrected ECC errors grew from 0 to 2 since the previous burn-in"
    assert [n.message for n in v.notes] == [grew]
    assert judge(result, th, previous_ecc={"uncorrected": [0, 0, 0, 0, 2, 0, 0, 0]}).notes == []


# --- new rules a lenient agent cannot bypass ---------------------------------------------------
@pytest.mark.parametrize("check,metrics,code", [
    ("gpu_burn", {"gpus_no_work": 2}, "gpuburn_no_work"),
    ("nccl", {"errors_over_limit": 3}, "nccl_error_high"),
])
def test_new_rules_catch_a_lenient_agent(th, check, metrics, code):
    v = judge(parse_result(with_check(good_doc(th), check, metrics=metrics)), th)
    assert v.status == "fail" and [r.code for r in v.reasons] == [code]


def test_gpu_burn_without_work_figures_is_not_a_pass(th):
    d = copy.deepcopy(good_doc(th))
    for c in d["checks"]:
        if c["name"] == "gpu_burn":
            del c["metrics"]["gpus_no_work"]
    v = judge(parse_result(d), th)
    assert v.status == "incomplete" and v.reasons[0].code == "missing_metric"
    assert set(GOOD_METRICS["gpu_burn"]) >= {"gpus_no_work"}


# --- the plan's time budget ---------------------------------------------------------------------
def test_full_profile_budget_covers_its_steps(th):
    sku = load_skus()[H100]
    mv = manifest_versions(load_file(data_dir("images") / "ubuntu-2404-cuda128.yaml").data)
    full = make_plan(sku, th, mv, "full")
    steps = full["tools"]
    assert full["check_timeouts_s"]["dcgm"] == steps["dcgmi"]["timeout_s"] + CHECK_SLACK_S
    assert full["check_timeouts_s"]["gpu_burn"] >= steps["gpu_burn"]["duration_s"] + 60
    assert full["check_timeouts_s"]["cpu_mem"] >= steps["stress_ng"]["duration_s"]
    assert set(full["check_timeouts_s"]) == set(full["checks"])
    assert full["budget_s"] > sum(full["check_timeouts_s"].values()) > 1800  # the old fixed kill
    assert full["budget_s"] == plan_budget_s(full)
    quick = make_plan(sku, th, mv, "quick")
    assert quick["budget_s"] < full["budget_s"]
    scaled = make_plan(sku, th, mv, "full", scale=0.01)
    assert scaled["tools"]["gpu_burn"]["duration_s"] == 9 and scaled["budget_s"] < full["budget_s"]
    assert check_budgets({"checks": ["xid"], "tools": {}}) == {"xid": 60.0}
