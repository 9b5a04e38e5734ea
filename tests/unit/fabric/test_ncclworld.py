"""Multi-node nccl-tests outputs: one communicator over the expected hosts, or not."""

from pathlib import Path

from bringup.fabric.ncclworld import parse_world, world_problems
from burnin.parsers.nccl import busbw_at_largest, parse_nccl_perf

FIX = Path(__file__).parents[2] / "fixtures"


def read(rel: str) -> str:
    return (FIX / rel).read_text()


def test_two_nodes_of_eight_h200_behind_stacked_prefixes_are_one_run():
    text = read("nccl-tests/skypilot-gke-h200-allgather-prefixed.txt")
    w = parse_world(text)
    assert [r.rank for r in w.ranks] == list(range(16))
    assert w.hosts == ["nc-d87e1263-head", "nc-d87e1263-worker1"]
    assert w.ranks[8].device == 0 and w.ranks[8].bus_id == "0000:8f:00" and w.ranks[8].gpu == "NVIDIA H200"
    assert w.headers == 1 and w.gpus_per_process == 1
    assert world_problems(w, nodes=2, ranks=16) == []
    # the same text's table, through the agent's parser, reaches the 8 GiB row
    assert max(r["size"] for r in parse_nccl_perf(text)["rows"]) == 8589934592
    # asked for three nodes, two took part
    assert any("2 host(s)" in p for p in world_problems(w, nodes=3, ranks=24))


def test_a_line_cut_short_is_not_a_rank():
    w = parse_world(read("nccl-multinode/soperator428-srun-h100-2x8-cut.txt"))
    assert [r.rank for r in w.ranks] == list(range(12))  # rank 12's line ends in "on   worke"
    assert w.hosts == ["worker-1", "worker-0"]
    assert world_problems(w, nodes=2, ranks=12) == []
    probs = world_problems(w, nodes=2, ranks=16)
    assert probs == ["12 GPU rank(s) took part, expected ranks 0..15"]


def test_a_build_without_mpi_is_every_process_rank_zero():
    w = parse_world(read("nccl-multinode/nccl-tests254-no-mpi-all-rank0-cut.txt"))
    assert len(w.ranks) == 12 and {r.rank for r in w.ranks} == {0}
    assert set(w.hosts) == {"dgx01", "dgx02"}
    probs = world_problems(w, nodes=2, ranks=16)
    assert any("rank(s) 0 printed more than once" in p for p in probs)
    assert any("header was printed 0 times" in p for p in probs)


def test_each_node_running_its_own_test_prints_the_header_twice():
    w = parse_world(read("nccl-multinode/nccl-tests213-separate-runs-cut.txt"))
    assert w.headers == 2 and w.gpus_per_process == 8
    probs = world_problems(w, nodes=2, ranks=16)
    assert probs[0].startswith("the test header was printed 2 times")


def test_a_table_without_its_rank_lines_proves_no_world():
    # the reporter quoted the table only: a good busbw, but nothing says who took part
    text = read("nccl-tests/awsome-batch-p5-tag-output.txt")
    assert busbw_at_largest(parse_nccl_perf(text)) > 400
    probs = world_problems(parse_world(text), nodes=2, ranks=16)
    assert "the test header was printed 0 times, expected once: no test started" in probs
    assert "ranks ran on 0 host(s) (none), expected 2" in probs
