"""A node pool, as NetBox holds it (the ``bringup_pool`` config context of the pool's
tag): where the workload labels of admitted nodes come from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Pool(BaseModel):
    """A node pool: where the workload labels of admitted nodes come from."""

    model_config = ConfigDict(extra="forbid")

    workload: str = "training"      # training | inference | batch
    sharing: str = "exclusive"      # exclusive | mig | time-slicing
    fabric: str = "ib-ndr400"       # compute fabric the pool is cabled to


__all__ = ["Pool"]
