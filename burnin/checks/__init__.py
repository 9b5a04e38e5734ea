"""The burn-in checks, one plugin each; :data:`REGISTRY` maps plan names to them."""

from .base import Check, CheckResult, Context  # noqa: F401
from .gpu import ClocksCheck, EccCheck, InventoryCheck, NvlinkCheck, PcieCheck
from .host import CpuMemCheck, DiskCheck, NetworkCheck
from .tools import DcgmCheck, GpuBurnCheck, NcclCheck
from .versions import VersionsCheck
from .xid import XidCheck

_ALL = [VersionsCheck, InventoryCheck, EccCheck, NvlinkCheck, NetworkCheck, DcgmCheck, GpuBurnCheck,
        NcclCheck, CpuMemCheck, PcieCheck, ClocksCheck, XidCheck, DiskCheck]

#: name -> class, in the order the agent runs them (stress phase in the middle)
REGISTRY = {c.name: c for c in _ALL}
#: checks that load the GPUs; telemetry is sampled while they run
STRESS = ("dcgm", "gpu_burn", "nccl")
