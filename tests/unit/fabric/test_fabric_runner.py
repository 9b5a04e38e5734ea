"""run_nccl_group's outcome from what mpirun printed (a fake SSH seam hands back recorded
outputs: no process runs here)."""

from pathlib import Path

from bringup.fabric.mpirun import NodeSsh
from bringup.fabric.runner import GroupNode, run_nccl_group
from bringup.remote.ssh import Completed, Target

FIX = Path(__file__).parents[2] / "fixtures"
SSH = NodeSsh("/root/.ssh/id_ed25519", "/etc/ssh/ssh_known_hosts")


class FakeSsh:
    def __init__(self, rc, stdout, stderr=""):
        self.out = (rc, stdout, stderr)
        self.commands = []

    def run(self, t, command, *, timeout, input=None, check=False):
        self.commands.append((t.name, command))
        rc, stdout, stderr = self.out
        return Completed(command, rc, stdout, stderr, 1.0, host=t.name)


def nodes(*names):
    return [GroupNode(n, Target(n, f"10.0.0.{i}"), f"10.0.0.{i}", 8) for i, n in enumerate(names, 1)]


def test_two_h200_nodes_one_run_at_full_bandwidth_pass_launched_from_the_first():
    fs = FakeSsh(0, (FIX / "nccl-tests/skypilot-gke-h200-allgather-prefixed.txt").read_text())
    r = run_nccl_group(fs, nodes("head", "worker1"), SSH, min_busbw_gbps=100)
    assert fs.commands[0][0] == "head" and fs.commands[0][1][3] == "mpirun"
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
        def run(self, t, command, *, timeout, input=None, check=False):
            self.commands.append((t.name, command, timeout))
            return Completed(command, None, "", "", timeout, timed_out=True)
    fs = Slow(0, "")
    r = run_nccl_group(fs, nodes("a", "b"), SSH, min_busbw_gbps=300, timeout=5)
    # the node stops its own mpirun at the deadline; our session waits a little longer
    assert fs.commands[0][1][:4] == ["timeout", "--kill-after=15", "5", "mpirun"] and fs.commands[0][2] == 50
    # nothing printed: the launch hung, so it was run once more, then given up as unknown
    assert len(fs.commands) == 2
    assert r.outcome == "unknown" and r.problems == [
        "mpirun printed nothing within 5s (its launch hung): stopped, run again", "mpirun did not finish within 5s"]


def test_a_hung_launch_is_run_again_and_a_stalled_run_is_not():
    good = (FIX / "nccl-tests/skypilot-gke-h200-allgather-prefixed.txt").read_text()

    class HungOnce(FakeSsh):
        def run(self, t, command, *, timeout, input=None, check=False):
            self.commands.append((t.name, command))
            if len(self.commands) == 1:   # coreutils timeout's exit: the launch never printed
                return Completed(command, 124, "", "", timeout)
            return Completed(command, 0, good, "", 1.0)
    fs = HungOnce(0, "")
    r = run_nccl_group(fs, nodes("head", "worker1"), SSH, min_busbw_gbps=100)
    assert len(fs.commands) == 2 and r.outcome == "pass" and r.problems == []

    class Stalled(FakeSsh):
        def run(self, t, command, *, timeout, input=None, check=False):
            self.commands.append((t.name, command))
            return Completed(command, 124, good.splitlines(keepends=True)[0] * 3, "", timeout)
    fs = Stalled(0, "")
    r = run_nccl_group(fs, nodes("head", "worker1"), SSH, min_busbw_gbps=100, timeout=30)
    assert len(fs.commands) == 1 and r.outcome == "unknown" and r.problems == ["mpirun did not finish within 30s"]


class FakeServer:
    """A perftest server as :meth:`bringup.remote.ssh.Ssh.start` hands it back."""

    def __init__(self, alive=True):
        self.alive = alive
        self.killed = False

    def poll(self):
        return None if self.alive and not self.killed else 0

    def kill(self):
        self.killed = True

    def wait(self, timeout, *, check=False):
        return Completed(["ib_write_bw"], 0, "", "", 0.1)


class RailSsh:
    """The client is refused ``refusals`` times (its server still starting), then reports."""

    def __init__(self, refusals, server):
        self.refusals, self.server, self.clients = refusals, server, 0

    def start(self, t, command):
        return self.server

    def run(self, t, command, *, timeout, input=None, check=False):
        self.clients += 1
        if self.clients <= self.refusals:
            return Completed(command, 1, " Couldn't connect to 10.0.0.1:18515\n", "", 0.1, host=t.name)
        return Completed(command, 0, (FIX / "perftest/cx7-ndr-write-gbits-cpufreq.txt").read_text(), "", 1.0)


def test_a_rail_client_waits_for_a_slow_server_then_gives_up_at_its_deadline(monkeypatch):
    from bringup.fabric import runner
    clock = [0.0]
    monkeypatch.setattr(runner.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    monkeypatch.setattr(runner.time, "monotonic", lambda: clock[0])
    srv, cli = nodes("srv", "cli")
    # a server that takes seconds to listen (a loaded node): the client keeps trying
    fs = RailSsh(4, FakeServer())
    r = runner.run_rail(fs, srv, cli, "mlx5_0", connect_wait=30)
    assert fs.clients == 5 and r.result is not None and r.problem == ""
    # one that never listens: the client gives up by the deadline, and the rail has no result
    clock[0] = 0.0
    fs = RailSsh(10**6, FakeServer())
    r = runner.run_rail(fs, srv, cli, "mlx5_0", connect_wait=30)
    assert r.result is None and "Couldn't connect" in r.problem and clock[0] <= 30
    # a server that died: no point waiting for it
    fs = RailSsh(10**6, FakeServer(alive=False))
    runner.run_rail(fs, srv, cli, "mlx5_0", connect_wait=30)
    assert fs.clients == 1


# issue #26: the pair test judges a run as the burn-in agent does (burnin.parsers.nccl)
def recorded(path):
    return (FIX / "nccl-tests" / path).read_text()


def test_a_pair_test_that_failed_before_any_row_is_a_failed_run_naming_the_failure():
    # nccl-tests #219: four ranks on fengyun416 and fengyun, "Test NCCL failure" at init; the
    # launcher's own report is on the same stream here, as the reporter pasted it. mpirun's
    # exit status is not in the report: the failure lines decide, whatever it was
    for rc in (0, 1):
        r = run_nccl_group(FakeSsh(rc, recorded("issue219-failure-before-rows-mpirun.txt")),
                           [GroupNode(n, Target(n, n), n, 2) for n in ("fengyun416", "fengyun")], SSH,
                           min_busbw_gbps=1)
        assert r.outcome == "fail" and r.busbw_gbps is None, r.problems
        assert r.problems[0].startswith("the run failed before any table row: fengyun: Test NCCL failure common.cu:959")


def test_a_failure_line_after_healthy_rows_fails_the_pair():
    # nccl-tests #322: five healthy rows (367 GB/s at 16 GiB), then "Test NCCL failure" from
    # several hosts and no summary; the excerpt has no rank lines (world unknown), the run failed
    r = run_nccl_group(FakeSsh(3, recorded("issue322-rows-then-nccl-failure-multihost.txt")),
                       nodes("HCA-128", "HCA-108"), SSH, min_busbw_gbps=100)
    assert r.outcome == "fail", r.problems
    assert any("failed after the 17179869184-byte row: HCA-128: Test NCCL failure common.cu:1204" in p
               for p in r.problems), r.problems


def test_the_launchers_report_on_stderr_fails_a_pair_whose_rows_look_healthy():
    # the table of a healthy two-node run, then OpenMPI's "exited on signal" (nccl-tests #218) on
    # stderr, where mpirun writes it: a rank died, whatever rank 0 printed
    r = run_nccl_group(FakeSsh(0, recorded("skypilot-gke-h200-allgather-prefixed.txt"),
                               recorded("issue218-mpirun-exited-on-signal.txt")),
                       nodes("head", "worker1"), SSH, min_busbw_gbps=100)
    assert r.outcome == "fail"
    assert any("exited on signal 11" in p for p in r.problems), r.problems


def test_a_run_cut_before_its_summary_is_never_a_pass_and_names_the_cut():
    # nccl/issues/1039: one node, four V100s, rows up to 64 bytes, then nothing; exit 0
    node = [GroupNode("job-1111-2222-0", Target("n", "10.0.0.1"), "10.0.0.1", 4)]
    for floor in (0.0, 300.0):
        r = run_nccl_group(FakeSsh(0, recorded("nccl1039-aborted-rows-no-summary.txt")), node, SSH,
                           min_busbw_gbps=floor)
        assert r.outcome == "unknown" and r.busbw_gbps is None, r.problems
        assert r.problems == [("incomplete run: cut before its summary, after the 64-byte row (no 'Out of bounds "
                               "values' / 'Avg bus bandwidth' lines)")]
