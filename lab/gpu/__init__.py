"""Simulated GPUs for the lab: an NVML stand-in library and node tool stand-ins.

- :func:`build_nvml` compiles ``nvml_stub.c`` into ``libnvidia-ml.so.1`` (cached by source
  hash, safe under concurrent builders) so the real pynvml can load it through
  ``LD_LIBRARY_PATH``; :func:`ensure_built` does it once for a lab home (``lab up``).
- :func:`write_node_profile` writes a node's NVML profile, tool profile, sysfs tree and tool
  stand-ins from its fleet entry, and returns the environment a simulated node's shell needs.
"""

from .build import build_nvml, ensure_built
from .profile import node_env, write_node_profile

__all__ = ["build_nvml", "ensure_built", "node_env", "write_node_profile"]
