"""Provisioning steps: through the BMC (BIOS, OS install) and over SSH (pinning,
configuration, the burn-in agent's run)."""

from .ansible_steps import (
    AGENT_DIR,
    BurninRun,
    NodeStep,
    configure,
    pack_agent,
    pin_versions,
    run_burnin,
)
from .redfish_steps import Bmc, InstallResult, apply_bios_profile, install_os

__all__ = ["AGENT_DIR", "Bmc", "BurninRun", "InstallResult", "NodeStep", "apply_bios_profile", "configure",
           "install_os", "pack_agent", "pin_versions", "run_burnin"]
