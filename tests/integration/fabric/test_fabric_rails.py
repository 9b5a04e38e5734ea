"""Per-rail ib_write_bw between two lab nodes (server and client stand-ins over SSH) and the
IB port counters read before and after a fabric test."""

from __future__ import annotations

import pytest

from bringup.fabric.counters import counter_growth
from bringup.fabric.policy import judge_rail, load_fabric_thresholds
from bringup.fabric.runner import read_counters, run_rail
from bringup.sku import load_skus

pytestmark = pytest.mark.integration
TH = load_fabric_thresholds("hgx-h100-80gb")
SKUS = load_skus()


def test_a_degraded_rail_shows_on_that_nic_only(fabric_lab):
    srv, cli = fabric_lab.group_node("rail"), fabric_lab.group_node("ok1")
    bad = run_rail(fabric_lab.fs, srv, cli, "mlx5_5")  # cx3: GPU3's NIC (the SKU map's name)
    good = run_rail(fabric_lab.fs, srv, cli, "mlx5_4", gpu=2)  # GPUDirect: --use_cuda=2
    assert bad.result is not None, (bad.problem, bad.client.stderr)
    assert bad.result.device == "mlx5_5" and bad.result.unit == "Gb"
    assert judge_rail("mlx5_5", bad.result, TH).outcome == "fail"
    assert bad.result.largest.avg_gbps == pytest.approx(180.0, abs=0.5)
    assert judge_rail("mlx5_4", good.result, TH).outcome == "pass"
    assert good.result.cuda_device == "NVIDIA H100 80GB HBM3" and bad.result.cuda_device is None
    # the server printed perftest's report too, after waiting for its client
    assert "Waiting for client to connect" in bad.server.stdout and "BW average[Gb/sec]" in bad.server.stdout
    # the same rail with another healthy node as server: still fine on ok1's side
    assert judge_rail("mlx5_5", run_rail(fabric_lab.fs, fabric_lab.group_node("ok2"), cli, "mlx5_5").result,
                      TH).outcome == "pass"


def test_a_client_without_a_server_is_unknown_never_a_pass(fabric_lab):
    from bringup.fabric.mpirun import ib_write_bw_argv
    ok2 = fabric_lab.fleet.node("ok2")
    out = fabric_lab.fs.run(fabric_lab.group_node("ok1").target, ib_write_bw_argv("mlx5_0", server=ok2.address,
                                                                                   port=18999), timeout=30)
    assert out.rc == 1 and f"Couldn't connect to {ok2.address}:18999" in out.stdout
    assert judge_rail("mlx5_0", None, TH).outcome == "unknown"


def test_counters_grow_on_a_flapping_port_during_a_test(fabric_lab):
    node, partner = fabric_lab.group_node("rail"), fabric_lab.group_node("ok2")
    before = {n.name: read_counters(fabric_lab.fs, n.target) for n in (node, partner)}
    assert len(before["rail"]) == 8 and before["rail"][("mlx5_3", 1)]["symbol_error"] >= 0
    r = run_rail(fabric_lab.fs, partner, node, "mlx5_3")
    assert judge_rail("mlx5_3", r.result, TH).outcome == "pass"  # the bandwidth alone hides it
    after = {n.name: read_counters(fabric_lab.fs, n.target) for n in (node, partner)}
    _rows, findings = counter_growth("rail", before["rail"], after["rail"], TH.counters)
    flapping = [f for f in findings if f.kind == "flapping_link"]
    assert {(f.hca, f.port) for f in flapping} == {("mlx5_3", 1)}
    assert any("symbol_error grew by 30" in f.message for f in flapping)
    assert any("link_downed grew by 1" in f.message for f in flapping)
    assert counter_growth("ok2", before["ok2"], after["ok2"], TH.counters)[1] == []


def test_a_nic_on_the_wrong_numa_node_shows_in_topo_and_sysfs(fabric_lab):
    from bringup.fabric.topomatrix import parse_topo_matrix
    slow, ok = fabric_lab.group_node("slow"), fabric_lab.group_node("ok1")
    numa = ["sh", "-c", 'cat "${BURNIN_SYSFS_ROOT:-}"/sys/class/infiniband/mlx5_4/device/numa_node']
    assert fabric_lab.fs.run(slow.target, numa, timeout=30).stdout.split() == ["1"]
    assert fabric_lab.fs.run(ok.target, numa, timeout=30).stdout.split() == ["0"]
    moved = parse_topo_matrix(fabric_lab.fs.run(slow.target, ["nvidia-smi", "topo", "-m"], timeout=30).stdout)
    healthy = parse_topo_matrix(fabric_lab.fs.run(ok.target, ["nvidia-smi", "topo", "-m"], timeout=30).stdout)
    assert moved.gpu(2).link("mlx5_4") == "SYS" and healthy.gpu(2).link("mlx5_4") == "PXB"
    assert [n.name for n in moved.nics] == [p.nic for p in SKUS["hgx-h100-80gb"].gpu_nic_map.pairs]
