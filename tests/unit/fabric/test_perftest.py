"""The perftest parser against recorded public outputs (tests/fixtures/perftest/SOURCES.md)."""

from pathlib import Path

import pytest

from bringup.errors import ParseError
from bringup.fabric.perftest import parse_perftest_bw

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "perftest"


def read(name: str) -> str:
    return (FIX / name).read_text()


def test_gbits_single_row_with_cpu_frequency_line_inside_the_table():
    r = parse_perftest_bw(read("cx7-ndr-write-gbits-cpufreq.txt"))
    assert (r.test, r.device, r.link_type, r.qps, r.unit) == ("RDMA_Write BW Test", "mlx5_0", "IB", 1, "Gb")
    assert [(x.bytes, x.iterations, x.avg_gbps) for x in r.rows] == [(65536, 5000, 392.34)]


def test_mib_units_are_converted_to_gbps():
    r = parse_perftest_bw(read("cx7-ndr-send-mib.txt"))
    assert r.unit == "MiB" and r.test == "Send BW Test"
    assert r.largest.avg_gbps == pytest.approx(390.55, abs=0.01)  # 46557.03 MiB/s


def test_duration_mode_prints_no_peak_and_post_list_title():
    r = parse_perftest_bw(read("perftest273-postlist-gbits-8b.txt"))
    assert r.test == "RDMA_Write Post List BW Test" and r.device == "ib0"
    assert r.rows[0].peak_gbps == 0.0 and r.rows[0].avg_gbps == 0.48 and r.rows[0].iterations == 224958464


def test_all_sizes_bidirectional_indented_block():
    r = parse_perftest_bw(read("rocm-bidir-all-sizes-gbits.txt"))
    assert len(r.rows) == 23 and r.rows[0].bytes == 2 and r.rows[0].avg_gbps == 0.012281
    assert r.largest.bytes == 8388608 and r.largest.avg_gbps == 204.59
    assert r.test == "RDMA_Write Bidirectional BW Test"


def test_cuda_preamble_and_teardown():
    r = parse_perftest_bw(read("a100-cuda-all-sizes-client.txt"))
    assert r.cuda_device == "NVIDIA A100-SXM4-80GB" and r.qps == 2 and len(r.rows) == 23
    assert r.largest.avg_gbps == 80.96


def test_cut_row_is_a_parse_error_naming_it():
    with pytest.raises(ParseError, match="cut short"):
        parse_perftest_bw(read("perftest234-mbsec-cut.txt"))


def test_no_header_or_no_rows_is_a_parse_error():
    text = read("cx7-ndr-write-gbits-cpufreq.txt")
    with pytest.raises(ParseError, match="no result header"):
        parse_perftest_bw(text.split(" #bytes")[0])
    with pytest.raises(ParseError, match="no row"):
        parse_perftest_bw(text.split("Conflicting")[0])
