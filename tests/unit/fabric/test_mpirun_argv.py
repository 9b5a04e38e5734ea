"""mpirun / nccl-tests / ib_write_bw command lines, the counter dump reader, and OpenMPI's
ssh trouble with a partner told apart from the fabric's. (How the controller's own SSH
session fails, and that a command exiting 255 is its own result, is the seam's:
tests/unit/remote/test_ssh_seam.py.)"""

import pytest

from bringup.errors import ConfigError, HostKeyMismatch
from bringup.fabric.mpirun import MpiHost, NodeSsh, ib_write_bw_argv, mpirun_argv, nccl_argv
from bringup.fabric.runner import GroupNode, _raise_for_partner_keys, parse_counter_dump
from bringup.remote.access import Target

SSH = NodeSsh("/home/bringup/.ssh/id_ed25519", "/etc/bringup/known_hosts", port=2222)


def test_one_rank_per_gpu_over_both_hosts_with_pinned_ssh():
    argv = mpirun_argv([MpiHost("n1", "10.0.0.1", 8), MpiHost("n2", "10.0.0.2", 8)], nccl_argv(), SSH,
                       env={"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": None})
    assert argv[:5] == ["mpirun", "-np", "16", "--host", "10.0.0.1:8,10.0.0.2:8"]
    rsh = argv[argv.index("plm_rsh_args") + 1].split()
    assert "StrictHostKeyChecking=yes" in rsh and "UserKnownHostsFile=/etc/bringup/known_hosts" in rsh
    assert rsh[rsh.index("-i") + 1] == "/home/bringup/.ssh/id_ed25519" and rsh[rsh.index("-p") + 1] == "2222"
    assert not any("accept-new" in a or "=no" in a for a in rsh)  # never added on first use
    assert argv[argv.index("plm_rsh_no_tree_spawn") + 1] == "1"
    assert "--tag-output" in argv and "--allow-run-as-root" not in argv
    assert argv[argv.index("-x") + 1] == "NCCL_DEBUG=WARN" and "NCCL_IB_HCA" in argv
    assert argv[-9:] == ["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"]


@pytest.mark.parametrize("hosts, msg", [
    ([MpiHost("n1", "10.0.0.1", 8), MpiHost("n1b", "10.0.0.1", 8)], "names a host twice"),
    ([MpiHost("n1", "10.0.0.1", 0)], "0 slots"),
    ([], "at least one host"),
])
def test_bad_groups_are_refused(hosts, msg):
    with pytest.raises(ConfigError, match=msg):
        mpirun_argv(hosts, nccl_argv(), SSH)


def test_a_key_path_openmpi_would_split_is_refused():
    with pytest.raises(ConfigError, match="without spaces"):
        mpirun_argv([MpiHost("n1", "10.0.0.1", 8)], nccl_argv(), NodeSsh("/a b/key", "/kh"))
    with pytest.raises(ConfigError, match="absolute"):
        mpirun_argv([MpiHost("n1", "10.0.0.1", 8)], nccl_argv(), NodeSsh("key", "/kh"))


def test_only_nccl_tests_binaries():
    assert nccl_argv("/opt/nccl-tests/build/all_gather_perf", end="1G")[:1] == ["/opt/nccl-tests/build/all_gather_perf"]
    with pytest.raises(ConfigError):
        nccl_argv("rm")


def test_ib_write_bw_server_and_client_sides():
    srv = ib_write_bw_argv("mlx5_3")
    cli = ib_write_bw_argv("mlx5_3", server="10.0.0.2", gpu=3)
    assert srv[:3] == ["ib_write_bw", "-d", "mlx5_3"] and "--report_gbits" in srv and srv[-1] == "--report_gbits"
    assert cli[-1] == "10.0.0.2" and "--use_cuda=3" in cli


def test_counter_dump_reads_every_port_and_skips_garbage():
    text = ("/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:3\n"
            "/lab/n1/root/sys/class/infiniband/mlx5_1/ports/1/counters/link_downed:0\n"
            "/sys/class/infiniband/mlx5_1/ports/1/counters/port_rcv_errors:N/A\n"
            "grep: /sys/class/infiniband/*/ports/*/counters/*: No such file or directory\n")
    assert parse_counter_dump(text) == {("mlx5_0", 1): {"symbol_error": 3}, ("mlx5_1", 1): {"link_downed": 0}}


# stderr of mpirun on the lab's first node (tests/integration/fabric), first lines
UNPINNED = ("No ED25519 host key is known for [127.95.172.2]:2222 and you have requested strict checking.\n"
            "Host key verification failed.\n")
CHANGED = ("@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
           "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
           "Host key for [127.95.172.2]:2222 has changed and you have requested strict checking.\n"
           "Host key verification failed.\n")
GROUP = [GroupNode("n1", Target("n1", "127.95.172.1", 2222), "127.95.172.1", 8),
         GroupNode("n2", Target("n2", "127.95.172.2", 2222), "127.95.172.2", 8)]


def test_partner_host_key_trouble_names_the_partner():
    with pytest.raises(ConfigError, match=r"n1 has no pinned host key for its fabric partner n2 \(127\.95\.172\.2\)"):
        _raise_for_partner_keys(GROUP, UNPINNED)
    with pytest.raises(HostKeyMismatch, match=r"partner n2 \(127\.95\.172\.2\) presented a host key other"):
        _raise_for_partner_keys(GROUP, CHANGED)
    _raise_for_partner_keys(GROUP, "[vm:10787] plm:rsh: Warning: setpgid(10891,10891) failed in parent\n")
