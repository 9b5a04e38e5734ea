"""The agent's network check reads each IB port's error counters from sysfs (names as in
tests/fixtures/ib-counters), for the health watch to compare between looks."""

from burnin.checks.base import CheckResult, Context
from burnin.checks.host import NetworkCheck


def port(root, ca, counters):
    d = root / "sys/class/infiniband" / ca / "ports" / "1"
    (d / "counters").mkdir(parents=True)
    (d / "state").write_text("4: ACTIVE\n")
    (d / "phys_state").write_text("5: LinkUp\n")
    (d / "rate").write_text("400 Gb/sec (4X NDR)\n")
    (d / "link_layer").write_text("InfiniBand\n")
    for name, value in counters.items():
        (d / "counters" / name).write_text(value)


def test_error_counters_are_read_and_odd_ones_left_out(tmp_path):
    port(tmp_path, "mlx5_0", {"link_downed": "3\n", "symbol_error": "17\n", "port_rcv_errors": "n/a\n",
                              "port_xmit_data": "123456789\n"})
    ctx = Context({"sysfs_root": str(tmp_path) + "/", "expect": {"ib_ports": 1, "ib_rate_gbps": 400}}, None)
    r = CheckResult(name="network")
    NetworkCheck().run(ctx, r)
    counters = r.data["ib_ports"]["mlx5_0/1"]["counters"]
    # an unreadable counter is absent (unknown to the comparison), traffic counters are not errors
    assert counters == {"link_downed": 3, "symbol_error": 17}
