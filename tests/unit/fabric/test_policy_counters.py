"""Fabric thresholds (fabric.yaml), per-rail judgement and IB counter growth."""

from pathlib import Path

import pytest

from bringup.errors import ConfigError
from bringup.fabric.counters import counter_growth
from bringup.fabric.perftest import parse_perftest_bw
from bringup.fabric.policy import judge_rail, load_fabric_thresholds

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "perftest"


def test_azure_nhc_numbers_are_in_data():
    assert load_fabric_thresholds("hgx-h100-80gb").min_rdma_gbps == 375
    assert load_fabric_thresholds("hgx-h200-141gb").min_rdma_gbps == 360
    with pytest.raises(ConfigError, match="no fabric thresholds"):
        load_fabric_thresholds("nope")


def test_rail_judged_on_its_largest_message():
    th = load_fabric_thresholds("hgx-h100-80gb")
    ndr = parse_perftest_bw((FIX / "cx7-ndr-write-gbits-cpufreq.txt").read_text())
    assert judge_rail("mlx5_0", ndr, th).outcome == "pass"            # 392.34 >= 375
    hdr = parse_perftest_bw((FIX / "rocm-bidir-all-sizes-gbits.txt").read_text())
    j = judge_rail("mlx5_1", hdr, th)
    assert j.outcome == "fail" and j.avg_gbps == 204.59 and "< 375" in j.message
    tiny = parse_perftest_bw((FIX / "perftest273-postlist-gbits-8b.txt").read_text())
    assert judge_rail("ib0", tiny, th).outcome == "unknown"           # 8 B messages judge nothing
    assert judge_rail("mlx5_2", None, th).outcome == "unknown"


LIMITS = load_fabric_thresholds("hgx-h200-141gb").counters


def reading(**values):
    base = dict.fromkeys(LIMITS, 0)
    base.update(values)
    return {("mlx5_0", 1): base}


def test_quiet_port_passes():
    rows, findings = counter_growth("n1", reading(symbol_error=3), reading(symbol_error=5), LIMITS)
    assert findings == [] and {r.outcome for r in rows} == {"pass"}


def test_growth_beyond_limit_names_hca_and_port():
    _, findings = counter_growth("n1", reading(link_downed=2), reading(link_downed=5), LIMITS)
    assert [(f.kind, f.hca, f.port) for f in findings] == [("flapping_link", "mlx5_0", 1)]
    assert "link_downed grew by 3" in findings[0].message


def test_reset_or_missing_counter_is_unknown_never_pass():
    rows, findings = counter_growth("n1", reading(port_rcv_errors=9), reading(port_rcv_errors=1), LIMITS)
    assert [f.kind for f in findings] == ["unknown"] and "backwards" in findings[0].message
    after = reading()
    del after[("mlx5_0", 1)]["symbol_error"]
    rows, findings = counter_growth("n1", reading(), after, LIMITS)
    assert [f.kind for f in findings] == ["unknown"] and "missing after" in findings[0].message
    assert [r.outcome for r in rows if r.counter == "symbol_error"] == ["unknown"]
