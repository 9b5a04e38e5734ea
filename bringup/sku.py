"""Per-SKU expectations: what a server of a device type must have.

In production they come from NetBox (the config context rendered onto each device, key
``bringup``); the same documents live in ``netbox/config-contexts/`` and are applied by
``bringup netbox apply``. This module only parses them into a typed model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.errors import ConfigError, ParseError
from bringup.fabric.topology import ExpectedTopology
from bringup.provision.firmware_policy import FirmwareRule
from bringup.resources import data_dir
from bringup.yamlio import load_file, validation_error

SCHEMA_DIR = data_dir("netbox")


class GpuSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = Field(ge=0)
    model: str
    memory_mib: int = Field(gt=0)
    nvlink_links: int = Field(ge=0)
    pcie_gen: int = Field(ge=1)
    pcie_width: int = Field(ge=1)
    ecc: str = "enabled"


class NicSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    compute: int = Field(ge=0)
    compute_model: str
    compute_speed_gbps: int = Field(gt=0)


class SkuSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str
    accelerator: str          # Kubernetes label value, e.g. h100-80gb
    topology: str             # e.g. 8gpu-sxm-nvlink
    gpu: GpuSpec
    nics: NicSpec
    bios_profile: str
    bios: dict[str, Any]
    image: str
    # which NIC sits behind which GPU's PCIe switch (bringup.fabric.topology); optional so a
    # SKU without one is checked as unknown, never passed
    gpu_nic_map: ExpectedTopology | None = None
    #: firmware each component must run (bringup.provision.firmware_policy); none: firmware is only listed
    firmware: list[FirmwareRule] = []


def sku_from_context(context: dict[str, Any], device: str = "") -> SkuSpec:
    """Parse a device's rendered NetBox config context (``device.config_context``)."""
    data = context.get("bringup") if isinstance(context, dict) else None
    if not isinstance(data, dict):
        raise ParseError("config context has no 'bringup' mapping", path="$.config_context.bringup",
                         source=device or "NetBox", hint="run `bringup netbox apply` so the SKU contexts exist")
    try:
        return SkuSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = "$.config_context.bringup." + ".".join(str(p) for p in first["loc"])
        raise ParseError(first["msg"], path=path, source=device or "NetBox") from None


def load_skus(schema_dir: Path = SCHEMA_DIR) -> dict[str, SkuSpec]:
    """The SKU catalogue from the repository's config contexts, keyed by SKU slug."""
    skus: dict[str, SkuSpec] = {}
    for path in sorted((schema_dir / "config-contexts").glob("sku-*.yaml")):
        doc = load_file(path)
        try:
            spec = SkuSpec.model_validate((doc.data or {}).get("data", {}).get("bringup", {}))
        except ValidationError as exc:
            raise validation_error(exc, doc, "SKU config context") from None
        skus[spec.sku] = spec
    if not skus:
        raise ConfigError(f"no SKU config contexts under {schema_dir / 'config-contexts'}")
    return skus


def nic_counts(skus: dict[str, SkuSpec]) -> dict[str, int]:
    """SKU -> compute NIC count, the shape :func:`bringup.fleet.load_fleet` wants."""
    return {k: v.nics.compute for k, v in skus.items()}
