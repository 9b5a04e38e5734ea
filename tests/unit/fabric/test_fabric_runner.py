"""run_nccl_group's outcome from what mpirun printed (a fake SSH adapter hands back recorded
outputs: no process runs here)."""

from pathlib import Path

from bringup.fabric.mpirun import NodeSsh, RunOutput, Target
from bringup.fabric.runner import GroupNode, run_nccl_group

FIX = Path(__file__).parents[2] / "fixtures"
SSH = NodeSsh("/root/.ssh/id_ed25519", "/etc/ssh/ssh_known_hosts")


class FakeSsh:
    def __init__(self, rc, stdout, stderr=""):
        self.out = (rc, stdout, stderr)
        self.commands = []

    def run(self, t, command, timeout):
        self.commands.append((t.name, command))
        rc, stdout, stderr = self.out
        return RunOutput(command, rc, stdout, stderr, 1.0, host=t.name)


def nodes(*names):
    return [GroupNode(n, Target(n, f"10.0.0.{i}"), f"10.0.0.{i}", 8) for i, n in enumerate(names, 1)]


def test_two_h200_nodes_one_run_at_full_bandwidth_pass_launched_from_the_first():
    fs = FakeSsh(0, (FIX / "nccl-tests/skypilot-gke-h200-allgather-prefixed.txt").read_text())
    r = run_nccl_group(fs, nodes("head", "worker1"), SSH, min_busbw_gbps=100)
    assert fs.commands[0][0] == "head" and fs.commands[0][1][0] == "mpirun"
    assert r.outcome == "pass" and r.problems == [] and r.busbw_gbps > 100
    below = run_nccl_group(fs, nodes("head", "worker1"), SSH, min_busbw_gbps=1000)
    assert below.outcome == "fail" and "below 1000" in below.problems[-1]


def test_a_build_without_mpi_is_unknown_whatever_its_table_says():
    text = (FIX / "nccl-multinode/nccl-tests254-no-mpi-all-rank0-cut.txt").read_text()
    text += (FIX / "nccl-tests/issue319-8g-row.txt").read_text()
    r = run_nccl_group(FakeSsh(0, text), nodes("dgx01", "dgx02"), SSH, min_busbw_gbps=1)
    assert r.outcome == "unknown" and any("more than once" in p for p in r.problems)


def test_ranks_never_started_are_unknown_but_a_test_that_died_fails():
    launch = ("--------------------------------------------------------------------------\n"
              "ORTE was unable to reliably start one or more daemons.\n")
    r = run_nccl_group(FakeSsh(255, "", launch), nodes("a", "b"), SSH, min_busbw_gbps=300)
    assert r.outcome == "unknown"
    # illustrative lines (not a recorded output): NCCL aborting on a broken link after start
    died = ("a:4242:4250 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<53334> with error 12\n"
            "mpirun noticed that process rank 3 with PID 0 on node 10.0.0.1 exited on signal 6 (Aborted).\n")
    r = run_nccl_group(FakeSsh(134, "", died), nodes("a", "b"), SSH, min_busbw_gbps=300)
    assert r.outcome == "fail" and r.busbw_gbps is None


def test_a_run_that_did_not_finish_is_unknown():
    class Slow(FakeSsh):
        def run(self, t, command, timeout):
            return RunOutput(command, None, "", "", timeout, timed_out=True)
    r = run_nccl_group(Slow(0, ""), nodes("a", "b"), SSH, min_busbw_gbps=300, timeout=5)
    assert r.outcome == "unknown" and r.problems == ["mpirun did not finish within 5s"]
