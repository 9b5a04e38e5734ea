"""The SSH control socket of an Ansible run fits a Unix socket path whatever TMPDIR is:
a test worker's TMPDIR (/tmp/pytest-of-root/pytest-117/worker20, 39 characters) once made
every node unreachable ("unix_listener: ... too long for Unix domain socket")."""

from __future__ import annotations

import pytest

from bringup.remote.ansible import CP_PREFIX, control_dir_base

#: the longest path ssh binds: <folder>/<%C: 40 hex>.<16 random characters>
SOCKET_TAIL = 1 + 40 + 1 + 16


@pytest.mark.parametrize("tmpdir", ["/tmp", "/tmp/pytest-of-root/pytest-99/worker20",
                                    "/tmp/pytest-of-root/pytest-117/worker20",
                                    "/tmp/pytest-of-root/pytest-113/popen-gw0/worker20", "/var/tmp/" + "x" * 90])
def test_the_socket_path_fits(tmpdir):
    folder = control_dir_base(tmpdir) + "/" + CP_PREFIX + "abcdefgh"
    assert len(folder) + SOCKET_TAIL <= 107, (tmpdir, folder)


def test_a_short_tmpdir_is_kept():
    assert control_dir_base("/tmp/short") == "/tmp/short"
    assert control_dir_base("/tmp/pytest-of-root/pytest-117/worker20") == "/tmp"
