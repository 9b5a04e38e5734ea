"""A node pool, as NetBox holds it (the ``bringup_pool`` config context of the pool's
tag): where the workload labels of admitted nodes come from."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Pool(BaseModel):
    """A node pool: where the workload labels of admitted nodes come from."""

    model_config = ConfigDict(extra="forbid")

    workload: str = "training"      # training | inference | batch
    sharing: str = "exclusive"      # exclusive | mig | time-slicing
    fabric: str = "ib-ndr400"       # compute fabric the pool is cabled to
    #: the pool's acceptance reference and limits over bringup/data/pool_acceptance.yaml
    #: (checked by bringup.workload.policy.load_policy)
    acceptance: dict[str, Any] = Field(default_factory=dict)


__all__ = ["Pool"]
