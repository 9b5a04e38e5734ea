"""Reaching the nodes in-band. :mod:`.access`: how we log in (``SshAccess``, ``Target``) and
the one host-key policy (keys pinned in our known_hosts, never learnt); :mod:`.ssh`: the SSH
seam every command on a node goes through (``Ssh.run``), its errors mapped to
:mod:`bringup.errors` in one place; :mod:`.ansible`: playbooks through ansible-runner, whose
OpenSSH gets its key, known_hosts and options from the same ``SshAccess``."""
