"""bringup.acceptance.judge, bringup.acceptance.result and the thresholds data: pure policy on constructed
result documents (shaped like the agent's output)."""

from __future__ import annotations

import copy
import json

import pytest

from bringup.acceptance.judge import REMEDIATION, judge
from bringup.acceptance.plan import make_plan, manifest_versions
from bringup.acceptance.result import parse_result
from bringup.acceptance.thresholds import OPERATORS, Rule, SkuThresholds, load_thresholds_file, thresholds_for
from bringup.errors import ConfigError, ParseError
from bringup.sku import load_skus

H100 = "hgx-h100-80gb"

GOOD_METRICS = {
    "versions": {"mismatches": 0},
    "inventory": {"gpu_count": 8, "memory_mib_min": 81559},
    "ecc": {"ecc_disabled_gpus": 0, "ecc_pending_gpus": 0, "uncorrected_volatile": 0, "uncorrected_aggregate": 0,
            "corrected_volatile": 0, "row_remap_pending_gpus": 0, "row_remap_failure_gpus": 0, "retired_pages": 0,
            "lifetime_limit_gpus": 0, "remapped_rows_uncorrectable_max": 0},
    "nvlink": {"links_active": 144, "links_down": 0, "error_total": 0},
    "network": {"ib_ports": 8, "ports_down": 0, "ports_slow": 0, "min_rate_gbps": 400.0},
    "dcgm": {"tests_passed": 3, "tests_failed": 0, "tests_not_run": 0},
    "gpu_burn": {"faulty_gpus": 0, "errors_total": 0, "gpus_tested": 8, "gpus_no_work": 0},
    "nccl": {"busbw_largest_gbps": 476.3, "wrong_total": 0, "oob_values": 0},
    "cpu_mem": {"stressors_failed": 0, "rc": 0},
    "pcie": {"downtrained_gpus": 0, "replay_total": 0, "gen_min": 5, "width_min": 16},
    "clocks": {"max_temp_c": 63, "thermal_slowdown_gpus": 0, "power_brake_gpus": 0},
    "xid": {"xid_count": 0, "fatal_count": 0, "codes": []},
    "disk": {"read_mib_s": 50.0, "write_mib_s": 50.0, "job_errors": 0},
}


@pytest.fixture(scope="module")
def th() -> SkuThresholds:
    return thresholds_for(load_skus()[H100])


def good_doc(th: SkuThresholds) -> dict:
    return {
        "schema_version": 1, "agent_version": "0.1.0", "node": {"name": "n1", "hostname": "n1"},
        "started": "2026-12-01T00:00:00Z", "finished": "2026-12-01T00:01:00Z",
        "plan": {"checks": list(th.required_checks)},
        "checks": [{"name": n, "status": "pass", "metrics": dict(GOOD_METRICS[n])} for n in th.required_checks],
    }


def with_check(doc: dict, name: str, **changes) -> dict:
    d = copy.deepcopy(doc)
    for c in d["checks"]:
        if c["name"] == name:
            metrics = changes.pop("metrics", {})
            c["metrics"].update(metrics)
            c.update(changes)
    return d


def test_healthy_document_passes(th):
    v = judge(parse_result(json.dumps(good_doc(th))), th)
    assert v.status == "pass" and v.reasons == []


def test_missing_required_check_is_incomplete_not_pass(th):
    d = good_doc(th)
    d["checks"] = [c for c in d["checks"] if c["name"] != "nccl"]
    v = judge(parse_result(d), th)
    assert v.status == "incomplete"
    assert [(r.check, r.code) for r in v.reasons] == [("nccl", "missing_check")]


@pytest.mark.parametrize("status", ["skip", "unsupported"])
def test_skipped_or_unsupported_required_check_is_incomplete(th, status):
    v = judge(parse_result(with_check(good_doc(th), "dcgm", status=status, summary="not here")), th)
    assert v.status == "incomplete" and v.reasons[0].code == "not_run" and "not here" in v.reasons[0].message


def test_failing_finding_becomes_reason_with_remediation(th):
    d = with_check(good_doc(th), "ecc", status="fail", metrics={"row_remap_pending_gpus": 1},
                   findings=[{"code": "row_remap_pending", "message": "GPU 3: a row remapping is pending",
                              "severity": "fail", "gpu": 3}])
    v = judge(parse_result(d), th)
    assert v.status == "fail"
    (r,) = v.reasons  # the rule on the same metric adds no duplicate
    assert r.check == "ecc" and "reset GPU 3" in r.remediation


def test_rule_catches_what_a_lenient_agent_passed(th):
    # the agent had no busbw limit in its plan and said pass; the library still judges
    d = with_check(good_doc(th), "nccl", metrics={"busbw_largest_gbps": 300.0})
    v = judge(parse_result(d), th)
    assert v.status == "fail"
    (r,) = v.reasons
    assert r.code == "busbw_low" and "300.0" in r.message and ">= 460" in r.message


def test_fatal_xid_rule_uses_the_data_list(th):
    d = with_check(good_doc(th), "xid", metrics={"codes": [13, 48]})
    v = judge(parse_result(d), th)
    assert v.status == "fail" and v.reasons[0].code == "xid_fatal"
    ok = judge(parse_result(with_check(good_doc(th), "xid", metrics={"codes": [13, 31]})), th)
    assert ok.status == "pass"  # 13 and 31 are application errors, not in the fatal list


def test_missing_metric_of_a_passed_check_is_incomplete(th):
    d = good_doc(th)
    for c in d["checks"]:
        if c["name"] == "clocks":
            del c["metrics"]["max_temp_c"]
    v = judge(parse_result(d), th)
    assert v.status == "incomplete" and v.reasons[0].code == "missing_metric"


def test_error_status_fails_with_tool_remediation(th):
    d = with_check(good_doc(th), "dcgm", status="error",
                   findings=[{"code": "tool_missing", "message": "dcgmi is not installed", "severity": "error",
                              "tool": "dcgmi"}])
    v = judge(parse_result(d), th)
    assert v.status == "fail" and "install dcgmi" in v.reasons[0].remediation


def test_failures_outrank_incomplete_and_come_first(th):
    d = with_check(good_doc(th), "nccl", metrics={"busbw_largest_gbps": 10.0})
    d["checks"] = [c for c in d["checks"] if c["name"] != "disk"]
    v = judge(parse_result(d), th)
    assert v.status == "fail"
    assert [r.blocking for r in v.reasons] == ["fail", "incomplete"]


def test_peers_flag_a_node_well_below_its_fleet(th):
    me = parse_result(with_check(good_doc(th), "nccl", metrics={"busbw_largest_gbps": 465.0}))
    peers = [parse_result(with_check(good_doc(th), "nccl", metrics={"busbw_largest_gbps": x}))
             for x in (540.0, 545.0, 550.0, 548.0, 542.0)]
    assert judge(me, th).status == "pass"
    v = judge(me, th, peers=peers)
    assert v.status == "fail" and v.reasons[0].code == "busbw_below_peers"
    assert "GB/s" in v.reasons[0].message and "5 peers" in v.reasons[0].message


def test_three_peers_are_too_few_and_the_comparison_is_reported_skipped(th):
    # was a fail with the flat 10 % tolerance; three peers are below the YAML's min_peers now
    me = parse_result(with_check(good_doc(th), "nccl", metrics={"busbw_largest_gbps": 465.0}))
    peers = [parse_result(with_check(good_doc(th), "nccl", metrics={"busbw_largest_gbps": x}))
             for x in (540.0, 545.0, 550.0)]
    v = judge(me, th, peers=peers)
    assert v.status == "pass"
    assert [n.code for n in v.notes] == ["peers_skipped"] and "busbw: 3 peers, 5 needed" in v.notes[0].message
    assert {c.figure: c.outcome for c in v.peer_checks}["busbw"] == "skipped"


@pytest.mark.parametrize("text,path", [
    ("not json at all", "$"),
    ("[1, 2]", "$"),
    ('{"schema_version": 2}', "$.schema_version"),
    ('{"error": "bad plan: no checks"}', "$.error"),
])
def test_parse_result_rejects_garbage_naming_the_path(text, path):
    with pytest.raises(ParseError) as exc:
        parse_result(text)
    assert exc.value.path == path


def test_parse_result_names_the_path_of_a_bad_field(th):
    d = good_doc(th)
    d["checks"][3]["status"] = "passed"
    with pytest.raises(ParseError) as exc:
        parse_result(d)
    assert exc.value.path == "$.checks[3].status"
    del d["checks"]
    with pytest.raises(ParseError) as exc:
        parse_result(d)
    assert exc.value.path == "$.checks"


def test_thresholds_data():
    tf = load_thresholds_file()
    assert {48, 79}.issubset(tf.fatal_xids)
    assert tf.skus["hgx-h100-80gb"]["min_busbw_gbps"] == 460
    assert tf.skus["hgx-h200-141gb"]["min_busbw_gbps"] == 431
    # every rule code has a remediation, and only fixed operators exist
    assert all(r.code in REMEDIATION for r in tf.rules)
    assert set(OPERATORS) == {">=", "<=", "==", "!=", ">", "<", "in", "not_in", "disjoint"}
    with pytest.raises(ValueError):
        Rule(check="x", metric="y", op="__import__('os')", value=1, code="z")


def test_thresholds_for_unknown_sku_is_a_config_error():
    sku = load_skus()[H100].model_copy(update={"sku": "hgx-b200"})
    with pytest.raises(ConfigError, match="no thresholds for SKU 'hgx-b200'"):
        thresholds_for(sku)


def test_make_plan(th):
    from bringup.resources import data_dir
    from bringup.yamlio import load_file
    sku = load_skus()[H100]
    mv = manifest_versions(load_file(data_dir("images") / "ubuntu-2404-cuda128.yaml").data)
    plan = make_plan(sku, th, mv, "quick", node="n1")
    assert plan["schema_version"] == 1 and plan["checks"] == th.required_checks
    assert plan["limits"]["min_busbw_gbps"] == 460 and 79 in plan["limits"]["fatal_xids"]
    assert plan["versions"]["driver"] == "570.133.20" and plan["versions"]["packages"] == {"nccl": "libnccl2"}
    assert plan["tools"]["all_reduce_perf"]["args"][-2:] == ["-g", "8"]
    assert plan["expect"]["ib_rate_gbps"] == 400
    full = make_plan(sku, th, mv, "full")
    assert full["tools"]["gpu_burn"]["duration_s"] > plan["tools"]["gpu_burn"]["duration_s"]
    with pytest.raises(ConfigError, match="no version for: driver"):
        make_plan(sku, th, {**mv, "driver": None})
    with pytest.raises(ConfigError):
        make_plan(sku, th, mv, "forever")  # type: ignore[arg-type]
    h200 = thresholds_for(load_skus()["hgx-h200-141gb"])
    with pytest.raises(ConfigError, match="thresholds are for"):
        make_plan(sku, h200, mv)


def test_summary_rule_does_not_repeat_a_failed_checks_findings(th):
    d = with_check(good_doc(th), "versions", status="fail", metrics={"mismatches": 1},
                   findings=[{"code": "driver_mismatch", "message": "driver: installed 570.86.15, image pins 570.133.20",
                              "severity": "fail", "component": "driver", "value": "570.86.15",
                              "limit": "570.133.20"}])
    v = judge(parse_result(d), th)
    assert [r.code for r in v.reasons] == ["driver_mismatch"]
    assert "reinstall the pinned driver 570.133.20" in v.reasons[0].remediation
    # and when a lenient agent passed it, the roll-up rule still fails the node
    lenient = with_check(good_doc(th), "versions", metrics={"mismatches": 2})
    assert [r.code for r in judge(parse_result(lenient), th).reasons] == ["version_mismatch"]
