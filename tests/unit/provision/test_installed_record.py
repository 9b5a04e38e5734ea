"""What image a node says it runs, read through the SSH seam (a stub seam: no socket):
no answer is "not known to be installed", another host key or our key refused is not."""

from __future__ import annotations

import pytest

from bringup.errors import HostKeyMismatch, SSHDropped, SSHError, SSHUnreachable
from bringup.provision.installed import IMAGE_RECORD, NodeRefusedOurKey, read_installed
from bringup.remote.access import Target
from bringup.remote.ssh import Completed

T = Target("n1", "127.0.0.5", 2222)
RECORD = "image: ubuntu-2404-cuda128\nkernel: 6.8.0-60-generic\nversions: {driver: 570.133.20}\n"


class StubSsh:
    def __init__(self, answer):
        self.answer, self.commands = answer, []

    def run(self, target, command, *, timeout, input=None, check=False):
        self.commands.append((target, command, timeout))
        if isinstance(self.answer, BaseException):
            raise self.answer
        rc, out = self.answer
        return Completed(command, rc, out, "", 0.1, host=target.name)


def test_the_record_the_node_keeps_is_read_over_the_seam():
    ssh = StubSsh((0, RECORD))
    there = read_installed(ssh, T)
    assert there.image == "ubuntu-2404-cuda128" and there.versions == {"driver": "570.133.20"}
    target, command, timeout = ssh.commands[0]
    assert target == T and IMAGE_RECORD in command and "BRINGUP_SYSROOT" in command and timeout == 5.0


@pytest.mark.parametrize("answer", [SSHUnreachable("no answer"), SSHDropped("gone"), (1, ""), (0, "  \n")])
def test_no_answer_or_no_record_is_not_known_to_be_installed(answer):
    assert read_installed(StubSsh(answer), T) is None


@pytest.mark.parametrize("error", [HostKeyMismatch("another key"), NodeRefusedOurKey("our key refused")])
def test_another_host_key_or_our_key_refused_is_raised(error):
    with pytest.raises(type(error)):
        read_installed(StubSsh(error), T)


def test_a_record_that_is_not_ours_says_where():
    with pytest.raises(SSHError, match=f"n1:{IMAGE_RECORD}: image: Field required"):
        read_installed(StubSsh((0, "kernel: x\n")), T)
