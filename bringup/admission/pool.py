"""A node pool, as NetBox holds it (the ``bringup_pool`` config context of the pool's
tag): where the workload labels of admitted nodes come from.

``sharing`` says how workloads get the pool's GPUs: ``exclusive`` (whole GPUs), ``mig``
(the ``mig`` section: a named geometry or profile -> count per GPU, and the device
plugin's strategy) or ``time-slicing`` (the ``time_slicing`` section: replicas per GPU).
The sections stay plain mappings here so a pool written before they existed parses
unchanged; :func:`bringup.admission.sharing.sharing_mode` checks them against the SKU's
GPU and says which field to fix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.errors import ConfigError


class Pool(BaseModel):
    """A node pool: where the workload labels of admitted nodes come from."""

    model_config = ConfigDict(extra="forbid")

    workload: str = "training"      # training | inference | batch
    sharing: str = "exclusive"      # exclusive | mig | time-slicing
    fabric: str = "ib-ndr400"       # compute fabric the pool is cabled to
    #: sharing: mig -> {geometry: all-1g.10gb | profiles: {3g.40gb: 2}, strategy: single | mixed}
    mig: dict[str, Any] | None = None
    #: sharing: time-slicing -> {replicas: N >= 2, rename_by_default, fail_requests_greater_than_one}
    time_slicing: dict[str, Any] | None = None
    #: the pool's acceptance reference and limits over bringup/data/pool_acceptance.yaml
    #: (checked by bringup.workload.policy.load_policy)
    acceptance: dict[str, Any] = Field(default_factory=dict)


def pool_of(context: Mapping[str, Any] | None) -> tuple[str, Pool]:
    """A node's pool name and its :class:`Pool` from the ``bringup_pool`` context NetBox
    renders for it (``NodeRecord.pool``); a field NetBox holds wrong is a ConfigError naming it."""
    pool = dict(context or {})   # no bringup_pool context: the default pool
    name = str(pool.pop("name", "default"))
    try:
        return name, Pool(**pool)
    except ValidationError as exc:
        raise ConfigError(f"pool {name}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}",
                          hint="fix the pool's bringup_pool config context in NetBox") from None


__all__ = ["Pool", "pool_of"]
