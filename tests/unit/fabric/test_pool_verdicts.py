"""The pure parts of a pool's fabric test: the first round (a lone node, known-good
partners), waves of node-disjoint pairs, the topology command's output, and each node's
document from what the test saw (who is blamed, links, flapping ports, unknowns)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from bringup.fabric.localise import localise
from bringup.fabric.models import FabricNode, PairResult
from bringup.fabric.policy import load_fabric_thresholds
from bringup.fabric.pooltest import Member, PoolRun, first_round, parse_topology_output, waves
from bringup.fabric.verdicts import matrix_rows, node_documents
from bringup.remote.access import Target
from bringup.sku import load_skus

SKU = load_skus()["hgx-h100-80gb"]
TH = load_fabric_thresholds("hgx-h100-80gb")
NICS = [p.nic for p in SKU.gpu_nic_map.pairs]
_spec = importlib.util.spec_from_file_location(
    "standin_fabric_pv", Path(__file__).parents[3] / "lab/gpu/tools/standin_fabric.py")
standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin)


def topo_text(moved: int | None = None) -> str:
    """What TOPOLOGY_COMMAND prints on a lab node (the stand-in's matrix, then sysfs)."""
    ib = [{"name": n, "numa_node": (0 if i < 4 else 1) ^ (1 if i == moved else 0)} for i, n in enumerate(NICS)]
    matrix = standin.topo_matrix({"gpu_count": 8, "ib": ib})
    sysfs = "".join(f"/lab/n/root/sys/class/infiniband/{c['name']}/device/numa_node:{c['numa_node']}\n" for c in ib)
    return matrix + "--- nic numa ---\n" + sysfs


def member(name, rack="r1", candidate=True):
    return Member(name=name, rack=rack, target=Target(name, "127.0.0.1"), address="127.0.0.1", gpus=8,
                  thresholds=TH, expected=SKU.gpu_nic_map, candidate=candidate)


def reading(**grow):
    return {(n, 1): {c: grow.get(n, 0) if c == "symbol_error" else 0 for c in TH.counters} for n in NICS}


def test_a_lone_candidate_pairs_with_an_active_node_of_its_rack_or_is_left_without():
    assert first_round([member("a")], [], "rack") == ([], ["a has no partner for the fabric test"])
    pairs, notes = first_round([member("a", "r2")], [member("g1", "r1", False), member("g2", "r2", False)], "rack")
    assert pairs == [("a", "g2")] and "active node g2" in notes[0]


def test_waves_never_put_a_node_in_two_tests_at_once():
    assert waves([("a", "b"), ("c", "d"), ("e", "a"), ("b", "c")]) == [[("a", "b"), ("c", "d")],
                                                                       [("e", "a"), ("b", "c")]]


def test_topology_output_takes_the_nics_numa_nodes_from_sysfs():
    topo = parse_topology_output(topo_text(moved=2))
    assert [n.name for n in topo.nics] == NICS
    assert topo.nic("mlx5_4").numa_node == 1 and topo.gpu(2).link("mlx5_4") == "SYS"


def run_of(results: dict[frozenset, PairResult], names, good=(), topo=None, after=None) -> tuple[PoolRun, list]:
    ms = [member(n) for n in names] + [member(g, candidate=False) for g in good]
    first, notes = first_round([m for m in ms if m.candidate], [m for m in ms if not m.candidate], "rack")

    def runner(batch):
        return [results.get(frozenset(p), PairResult(a=p[0], b=p[1], outcome="pass")).model_copy(
            update={"a": p[0], "b": p[1]}) for p in batch]
    loc = localise([FabricNode(name=m.name, rack=m.rack) for m in ms], first, runner)
    run = PoolRun(mode="rack", notes=notes, localiser=loc,
                  pairs=[{"a": r.a, "b": r.b, "outcome": r.outcome, "rails": r.rails, "busbw_gbps": 370.0,
                          "detail": r.detail} for r in loc.results])
    for m in ms:
        if m.candidate:
            run.topology[m.name] = (topo or {}).get(m.name) or parse_topology_output(topo_text())
            run.before[m.name] = reading()
            run.after[m.name] = (after or {}).get(m.name) or reading()
    return run, ms


def fail(a, b, **rails):
    return PairResult(a=a, b=b, outcome="fail", rails={n: rails.get(n, "pass") for n in NICS}, detail="slow")


def test_a_healthy_pool_blames_no_one():
    run, ms = run_of({}, ["a", "b", "c", "d"])
    docs = node_documents(run, ms)
    assert {d["verdict"] for d in docs.values()} == {"pass"} and all(d["blamed"] == [] for d in docs.values())
    assert matrix_rows(run, "s/p")[0]["rails"] == "0/0 pass"


def test_blamed_node_names_its_rail_the_link_passes_both_and_a_flapping_port_fails():
    bad = {"mlx5_5": "fail"}
    results = {frozenset(p): fail(*p, **bad) for p in [("e", "f"), ("e", "a"), ("e", "b")]}
    results[frozenset(("c", "d"))] = fail("c", "d")
    grown = reading(mlx5_3=40)
    run, ms = run_of(results, ["a", "b", "c", "d", "e", "f"], after={"a": grown},
                     topo={"b": parse_topology_output(topo_text(moved=2))})
    docs = node_documents(run, ms)
    assert docs["e"]["verdict"] == "fail" and "on rail mlx5_5" in docs["e"]["reasons"][0]
    assert docs["c"]["verdict"] == docs["d"]["verdict"] == "pass"
    assert docs["c"]["links"][0]["nodes"] == ["c", "d"] and docs["d"]["links"] == docs["c"]["links"]
    assert docs["a"]["verdict"] == "fail" and "flapping link: a mlx5_3/1: symbol_error grew by 40" in \
        docs["a"]["reasons"][0]
    assert docs["b"]["verdict"] == "fail" and any("GPU2" in r and "mlx5_4" in r for r in docs["b"]["reasons"])
    assert docs["f"]["verdict"] == "pass" and docs["f"]["blamed"] == ["e"]


def test_undecided_is_never_a_pass():
    run, ms = run_of({frozenset(("a", "b")): PairResult(a="a", b="b", outcome="unknown", detail="timed out")},
                     ["a", "b"])
    docs = node_documents(run, ms)
    assert {d["verdict"] for d in docs.values()} == {"unknown"}
    # the pair's own detail is among the reasons, not only "not enough partners"
    assert "pair a - b unknown: timed out" in docs["a"]["reasons"]
    run, ms = run_of({}, ["a"])
    assert node_documents(run, ms)["a"]["reasons"] == ["a has no partner for the fabric test"]
    run, ms = run_of({}, ["a", "b"])
    run.after["a"] = "SSHUnreachable: gone"
    assert node_documents(run, ms)["a"]["verdict"] == "unknown"
