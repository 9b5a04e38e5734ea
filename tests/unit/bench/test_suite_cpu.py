"""bench/suite_cpu.py: acct v3 records read, parents found across pid reuse, CPU put
under what spent it."""

from __future__ import annotations

import pytest
from bench_scripts import load, unload


@pytest.fixture(scope="module")
def suite_cpu():
    yield load("suite_cpu")
    unload("suite_cpu")


def record(m, pid, ppid, start, comm, utime_ticks, stime_ticks=0, version=3):
    return m.RECORD.pack(0, version, 0, 0, 0, 0, pid, ppid, start, 1.0, utime_ticks, stime_ticks,
                         0, 0, 0, 0, 0, 0, comm.encode())


def test_comp_t_exponent_is_base_8(suite_cpu):
    assert suite_cpu.comp_t(100) == 100
    assert suite_cpu.comp_t((1 << 13) | 5) == 40          # 5 * 8
    assert suite_cpu.comp_t((2 << 13) | 3) == 192         # 3 * 64


def test_a_reused_pid_is_not_taken_for_the_parent(tmp_path, suite_cpu):
    m = suite_cpu
    # records in exit order: pid 700 was an sshd that exited before the module run began;
    # the module's parent sh (pid 701) was started by the *second* pid 700, an sshd
    # that exits last
    data = b"".join([
        record(m, 700, 1, 10, "sshd", 5),
        record(m, 702, 701, 50, "python3", 30),
        record(m, 701, 700, 49, "sh", 1),
        record(m, 704, 703, 61, "ansible-playboo", 11),
        record(m, 703, 1, 60, "ansible-playboo", 200),
        record(m, 700, 1, 40, "sshd", 2),
    ])
    path = tmp_path / "pacct"
    path.write_bytes(data)
    procs = m.read(path)
    up = m.parents(procs)
    assert up[1] == 2 and up[2] == 5          # python3 -> sh -> the second sshd, not the first
    assert m.kind(m.chain(procs, up, 1)) == "Ansible: module runs on the nodes"
    assert m.kind(m.chain(procs, up, 4)) == "Ansible: ansible-playbook"
    assert m.kind(m.chain(procs, up, 3)) == "Ansible: its forks"
    text = m.report(procs, wall_s=10.0, cores=2)
    assert "6 processes, 2 CPU-s in 10 s wall: 12% of 2 cores busy" in text
    assert "Ansible: ansible-playbook" in text.splitlines()[3]     # the largest first


def test_an_older_record_version_is_refused(tmp_path, suite_cpu):
    path = tmp_path / "pacct"
    path.write_bytes(record(suite_cpu, 1, 0, 0, "x", 1, version=2))
    with pytest.raises(SystemExit, match="acct version 2, not 3"):
        suite_cpu.read(path)
