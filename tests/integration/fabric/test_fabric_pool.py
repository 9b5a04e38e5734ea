"""A pool's whole fabric test over the lab's sshd nodes with the real OpenMPI mpirun:
topology, counters, pairs with every rail, localisation, and each node's document and
step result. Each lab fault kind is caught and named; a healthy pool blames no one."""

from __future__ import annotations

import os

import pytest

from bringup.fabric.fabric_step import result_of
from bringup.fabric.policy import load_fabric_thresholds
from bringup.fabric.pooltest import Member, PoolTest
from bringup.fabric.verdicts import matrix_rows, node_documents
from bringup.sku import load_skus

pytestmark = pytest.mark.integration
SKU = load_skus()["hgx-h100-80gb"]
TH = load_fabric_thresholds("hgx-h100-80gb")


def members(lab, names, good=()):
    out = []
    for n in [*names, *good]:
        g = lab.group_node(n)
        out.append(Member(name=n, rack="r1", target=g.target, address=g.address, gpus=8, thresholds=TH,
                          expected=SKU.gpu_nic_map, candidate=n not in good))
    return out


def pool(lab, names, good=(), mode="rack"):
    ms = members(lab, names, good)
    test = PoolTest(lab.fs, lab.node_ssh, ms, mode=mode, end="8G", nccl_timeout=120, rail_timeout=60,
                    allow_run_as_root=os.geteuid() == 0)
    run = test.run()
    return run, node_documents(run, ms)


def test_a_healthy_pool_passes_with_no_one_blamed(fabric_lab):
    run, docs = pool(fabric_lab, ["ok1", "ok2"])
    assert {n: d["verdict"] for n, d in docs.items()} == {"ok1": "pass", "ok2": "pass"}, docs
    assert all(d["blamed"] == [] and d["reasons"] == [] and d["links"] == [] for d in docs.values())
    [row] = matrix_rows(run, "t/p")
    assert row["outcome"] == "pass" and row["rails"] == "8/8 pass" and row["busbw GB/s"] > 340
    assert docs["ok1"]["topology"]["outcome"] == "pass"
    r = result_of("ok1", docs["ok1"])
    assert r.ok and r.evidence[0].kind == "fabric" and "blamed in this pool: no node" in r.evidence[0].summary


def test_the_faulty_pool_names_node_rail_link_port_and_nic(fabric_lab):
    run, docs = pool(fabric_lab, ["ok1", "ok2", "rail", "c1", "c2", "slow"])
    verdicts = {n: d["verdict"] for n, d in docs.items()}
    assert verdicts == {"ok1": "pass", "ok2": "pass", "c1": "pass", "c2": "pass", "rail": "fail",
                        "slow": "fail"}, {n: d["reasons"] for n, d in docs.items()}
    # the slow node: blamed after failing with two known-good partners, named in the reason
    slow = " ".join(docs["slow"]["reasons"])
    assert "slow fails with known-good partners" in slow
    # and its third NIC on the other socket blocks it too, naming GPU and NIC
    assert "GPU2" in slow and "mlx5_4" in slow
    # the degraded rail is named (cx3: GPU3's NIC, mlx5_5), and the flapping port (cx1: mlx5_3)
    rail = " ".join(docs["rail"]["reasons"])
    assert "on rail mlx5_5" in rail and "flapping link: rail mlx5_3/1" in rail
    # the bad cable: both nodes pass, the link is recorded in both documents
    for n in ("c1", "c2"):
        assert [link["nodes"] for link in docs[n]["links"]] == [["c1", "c2"]]
        res = result_of(n, docs[n])
        assert res.ok and "bad link" in res.evidence[0].summary and res.evidence[0].style == "warning"
    assert docs["ok1"]["blamed"] == ["rail", "slow"]
    res = result_of("slow", docs["slow"])
    assert not res.ok and any("known-good partners" in r for r in res.reasons)
    assert run.localiser.rounds >= 2  # the failures were retested


def test_a_lone_node_is_held_without_a_partner_and_tested_with_an_active_one(fabric_lab):
    _run, docs = pool(fabric_lab, ["ok1"])
    assert docs["ok1"]["verdict"] == "unknown"
    assert any("no partner for the fabric test" in r for r in docs["ok1"]["reasons"])
    _run, docs = pool(fabric_lab, ["ok1"], good=("ok2",))
    assert docs == {"ok1": docs["ok1"]} and docs["ok1"]["verdict"] == "pass"
    assert docs["ok1"]["partners"] == ["ok2"]
