"""The ibstat parser and assessment against recorded public outputs
(tests/fixtures/ibstat/README.md)."""

from pathlib import Path

import pytest

from burnin.parsers import UnparseableOutput
from burnin.parsers.ibstat import assess, parse_ibstat

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "ibstat"


def read(name: str) -> str:
    return (FIX / name).read_text()


def test_roce_ports_are_read_and_not_counted_as_infiniband():
    p = parse_ibstat(read("l2fwd-nv6-cx6dx-ethernet.txt"))
    assert p["ports"] == [
        {"ca": "mlx5_0", "port": 1, "state": "Active", "physical_state": "LinkUp", "rate_gbps": 100.0,
         "link_layer": "Ethernet"},
        {"ca": "mlx5_1", "port": 1, "state": "Active", "physical_state": "LinkUp", "rate_gbps": 100.0,
         "link_layer": "Ethernet"},
    ]
    assert p["cas"]["mlx5_0"]["ca_type"] == "MT4125" and p["cas"]["mlx5_0"]["firmware"] == "22.32.2004"
    assert {f["severity"] for f in assess(p)} == {"info"}
    missing = [f for f in assess(p, expect_ports=8, expect_rate_gbps=400) if f["severity"] != "info"]
    assert [f["code"] for f in missing] == ["ib_port_missing"]


def test_two_port_hca_with_a_disabled_port_and_debug_lines():
    p = parse_ibstat(read("rdma-core847-mlx4-two-ports-cut.txt"))
    assert [(x["port"], x["state"], x["rate_gbps"]) for x in p["ports"]] == [(1, "Down", 10.0), (2, "Active", 56.0)]
    assert p["ports"][1]["link_layer"] is None  # the excerpt ends after Rate: not a default
    f = assess(p)
    assert [x["code"] for x in f] == ["ib_port_down"] and f[0]["port"] == "mlx4_0/1"
    assert "Disabled" in f[0]["message"]
    # with a SKU to meet, a port whose link layer was cut off cannot be judged
    assert "ib_port_unreadable" in [x["code"] for x in assess(p, expect_ports=2, expect_rate_gbps=56)]


def test_ibpanic_is_an_error_and_elided_fields_do_not_break_the_parse():
    p = parse_ibstat(read("gpud752-ibpanic.txt"))
    assert p["ports"] == [{"ca": "mlx5_7", "port": 1, "state": "Active", "physical_state": "LinkUp",
                           "rate_gbps": 200.0, "link_layer": "InfiniBand"}]
    assert p["panics"] and "mlx5_8" in p["panics"][0]
    f = assess(p, expect_ports=1, expect_rate_gbps=200)
    assert [(x["code"], x["severity"]) for x in f] == [("ibstat_panic", "error")]


def test_mixed_roce_and_a_cut_down_port():
    p = parse_ibstat(read("mooncake1999-mixed-cut.txt"))
    down = p["ports"][-1]
    assert down["ca"] == "mlx5_10" and down["state"] == "Down" and down["rate_gbps"] is None
    codes = [x["code"] for x in assess(p)]
    assert codes.count("ib_port_ethernet") == 2 and "ib_port_unreadable" in codes
    assert "ib_port_down" in codes  # the state was printed before the cut: it is known


# a panic before any CA (ibstat found no device) is understood as such: test_tool_runs.py
@pytest.mark.parametrize("text", ["", "ibwarn: [1234] umad_init: can't read ABI version\n"])
def test_no_ca_block_is_unparseable(text):
    with pytest.raises(UnparseableOutput, match="no \"CA"):
        parse_ibstat(text)
