"""Reaching the nodes in-band: SSH (:mod:`.ssh`, host keys pinned) and Ansible over it
(:mod:`.ansible`, through ansible-runner)."""
