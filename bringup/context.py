"""The connections of a run, built from settings: NetBox, BMCs, SSH, Kubernetes.

Cheap to build and lazy to connect; every step function is handed one. The settings
come from the file the operator named (``--config``) and travel with the run, so every
task of a flow talks to the same site.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from bringup.errors import ConfigError
from bringup.netbox.adapter import NetBox, NodeRecord, connect
from bringup.settings import Settings, load_settings


class Context:
    def __init__(self, settings: Settings, netbox: NetBox | None = None) -> None:
        self.settings = settings
        self._netbox = netbox

    @classmethod
    def from_settings(cls, path: str | Path | None = None) -> Context:
        return cls(load_settings(path))

    @property
    def netbox(self) -> NetBox:
        if self._netbox is None:
            self._netbox = NetBox(connect(self.settings.netbox_url, self.settings.netbox_token(),
                                          inflight=self.settings.netbox_max_inflight))
        return self._netbox

    def node(self, name: str) -> NodeRecord:
        """One node's record, without its MACs (``macs`` is ``None``): the step that compares
        them (discovery) reads them itself."""
        return self.netbox.nodes(names=[name])[0]

    @cached_property
    def evidence(self):
        """Each stage's documents, kept in NetBox (see :mod:`bringup.netbox.evidence`)."""
        from bringup.netbox.evidence import EvidenceStore
        return EvidenceStore(self.netbox)

    # --- BMC ------------------------------------------------------------------------------------
    @cached_property
    def credentials(self):
        """``credentials_for(address)`` from the settings' BMC credentials file."""
        from bringup.redfish import load_credentials
        if not self.settings.bmc_credentials_file:
            raise ConfigError("settings have no bmc_credentials_file")
        return load_credentials(self.settings.bmc_credentials_file)

    def bmc(self, address: str, timeout: float = 10.0):
        from bringup.redfish import connect as redfish_connect
        s = self.settings
        return redfish_connect(address, self.credentials(address), port=s.bmc_port,
                               ca_bundle=str(s.bmc_ca_bundle) if s.bmc_ca_bundle else None,
                               insecure=s.bmc_insecure, timeout=timeout)

    # --- nodes over SSH -------------------------------------------------------------------------
    def ssh_access(self):
        """How we log in to nodes (:class:`~bringup.remote.access.SshAccess`), for Ansible."""
        from bringup.remote.access import SshAccess
        return SshAccess.from_settings(self.settings)

    def ssh(self):
        """The SSH seam (:class:`~bringup.remote.ssh.Ssh`): every command run on a node."""
        from bringup.remote.ssh import Ssh
        return Ssh(self.ssh_access())

    def target(self, rec: NodeRecord):
        """How the controller reaches ``rec`` over SSH (:class:`~bringup.remote.access.Target`)."""
        from bringup.remote.access import Target
        return Target(rec.name, rec.address, self.settings.ssh_port)

    def host(self, rec: NodeRecord) -> dict[str, dict[str, Any]]:
        return {rec.name: {"address": rec.address, "port": self.settings.ssh_port}}

    # --- Kubernetes -----------------------------------------------------------------------------
    @cached_property
    def kube(self):
        from bringup.kube import KubeAdapter
        if not self.settings.kubeconfig:
            raise ConfigError("settings have no kubeconfig")
        return KubeAdapter.from_kubeconfig(self.settings.kubeconfig)
