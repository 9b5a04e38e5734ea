"""Simulated nodes: a real OpenSSH sshd per node, on the node's loopback address.

Only the hardware and the installed OS are simulated. Each node has a folder
``<home>/nodes/<name>/`` holding its sshd config, host key, state and a ``root/`` folder
that stands for the node's file system (dpkg database, /proc/driver/nvidia/version...).
Ansible and the burn-in agent reach the node through the real sshd, exactly as they
would reach a real host; playbooks work under the node's root because the node's
environment says where it is (``BRINGUP_SYSROOT``), the way a chroot would.

Modules: :mod:`.sshd` (keys, config, start/stop), :mod:`.install` (what "installing the
OS from virtual media" does to a node), :mod:`.serve` (the supervisor process).
"""
