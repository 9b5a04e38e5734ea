"""The BMC's GPU serials (recorded at discovery) against NVML's: what differs, and what
cannot be compared. Pure: serials in, messages out; the judge weighs them.

Why some BMC serials are left out: a placeholder ("0000000000000", "N/A", none at all) and
a serial several GPUs report (a board's serial on both GPUs of a GB200 board) identify no
GPU, so a "mismatch" against them says nothing about a swap. The placeholder pattern is
discovery's own (``gpu_serial_placeholder`` in the defaults of bringup/redfish/quirks.yaml;
the judge has the serials, not the BMC's make, so a vendor entry's pattern cannot apply).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from bringup.redfish.quirks import quirks_for

#: what NVML prints for a GPU without a serial
NVML_NO_SERIAL = ("", "N/A", "[N/A]")


@cache
def placeholder_pattern() -> str:
    return quirks_for(None, None).gpu_serial_placeholder


@dataclass(frozen=True)
class SerialComparison:
    only_bmc: list[str]
    only_nvml: list[str]
    placeholders: list[str]
    shared: list[str]
    compared: int

    @property
    def mismatch(self) -> str | None:
        """What differs, or None when nothing that was compared does."""
        parts = []
        if self.only_nvml:
            parts.append(f"NVML reports {', '.join(self.only_nvml)} that the BMC did not at discovery")
        if self.only_bmc:
            parts.append(f"the BMC reported {', '.join(self.only_bmc)} that NVML does not")
        return "GPU serials differ from discovery: " + "; ".join(parts) if parts else None

    @property
    def not_compared(self) -> str | None:
        """What was left out of the comparison, or None when every BMC serial was compared."""
        what = ([f"placeholder serial(s) {', '.join(repr(p) for p in self.placeholders)}"] if self.placeholders
                else []) + ([f"serial(s) {', '.join(self.shared)} reported by several GPUs (a board's)"]
                            if self.shared else [])
        if not what:
            return None
        return (f"the BMC's GPU serials include {'; '.join(what)}: they identify no GPU and were not compared "
                f"with NVML's ({self.compared} real BMC serial(s) were)")


def compare(nvml_serials: Sequence[str | None], bmc_serials: Sequence[str | None],
            placeholder: str | None = None) -> SerialComparison:
    """Compared as sets (the BMC and NVML enumerate GPUs in different orders). With a BMC
    serial that identifies no GPU, an NVML serial the BMC did not list may be that GPU's:
    then only a real BMC serial that NVML lacks is a difference."""
    pattern = placeholder if placeholder is not None else placeholder_pattern()
    nvml = {str(s).strip() for s in nvml_serials if s is not None and str(s).strip() not in NVML_NO_SERIAL}
    listed = ["" if s is None else str(s).strip() for s in bmc_serials]
    placeholders = sorted({s for s in listed if re.search(pattern, s)})
    real = [s for s in listed if s not in placeholders]
    shared = sorted({s for s in real if real.count(s) > 1})
    bmc = set(real) - set(shared)
    return SerialComparison(only_bmc=sorted(bmc - nvml),
                            only_nvml=[] if placeholders or shared else sorted(nvml - bmc),
                            placeholders=placeholders, shared=shared, compared=len(bmc))
