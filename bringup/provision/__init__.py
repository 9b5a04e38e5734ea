"""Provisioning: the OS image manifest (:mod:`.image`), the node's install seed
(:mod:`.install_seed`, :mod:`.seed_iso`, :mod:`.hostkeys`), what a node already runs
(:mod:`.installed`), firmware policy (:mod:`.firmware_policy`), the work through the BMC
(:mod:`.redfish_steps`: BIOS, OS install) and over SSH (:mod:`.ansible_steps`: pinning,
configuration, the burn-in agent's run), and the lifecycle's ``firmware``, ``bios``,
``install`` and ``configure`` steps."""
