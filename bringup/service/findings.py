"""What class a finding is (hardware, software or config) and what follows from it (issue
#27, items 5 and 6).

A node quarantined for driver drift from the image repository was sent to hardware
inspection: the repeat-offender rule counted every quarantine alike. Each finding code (the
burn-in judge's reason codes, the health watch's signal codes) has a class in
``bringup/data/guard.yaml`` (``finding_classes``); only the classes listed under ``counts``
(hardware) count towards "quarantined twice in 30 days -> inspection". A code the file does
not know takes the ``default`` class (hardware: an unknown finding never excuses a node).
The class also picks the taint effect a health-watch quarantine carries
(``taint_effects`` in ``bringup/data/healthwatch.yaml``): ``NoExecute`` evicts running work
at once, ``NoSchedule`` lets it finish.

Who asked for something (a forced re-test, a repair) is :func:`bringup.settings.operator`
(re-exported here). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bringup.settings import OPERATOR_ENV, operator

FindingClass = Literal["hardware", "software", "config"]
Effect = Literal["NoSchedule", "NoExecute"]


class FindingClasses(BaseModel):
    """``finding_classes`` of ``bringup/data/guard.yaml``."""

    model_config = ConfigDict(extra="forbid")
    default: FindingClass = "hardware"
    #: the classes whose quarantines count towards hardware inspection
    counts: list[FindingClass] = Field(default_factory=lambda: ["hardware"])
    codes: dict[str, FindingClass] = Field(default_factory=dict)

    def of(self, code: str) -> FindingClass:
        return self.codes.get(code, self.default)

    def classify(self, codes: Iterable[str]) -> FindingClass:
        """The class of a quarantine for ``codes``: hardware when any is, else software when
        any is, else config; no code at all is the default class."""
        found = {self.of(c) for c in codes}
        for cls in ("hardware", "software", "config"):
            if cls in found:
                return cls  # type: ignore[return-value]
        return self.default

    def counted(self, cls: FindingClass) -> bool:
        return cls in self.counts


__all__ = ["OPERATOR_ENV", "Effect", "FindingClass", "FindingClasses", "operator"]
