"""Firmware policy: which firmware a SKU must run, and what a BMC's inventory says about it.

The SKU's config context lists one rule per component (BMC, BIOS, GPU VBIOS, NIC, CPLD,
NVSwitch): a regex on the FirmwareInventory member's Id or Name, a ``min`` or ``exact``
version, the version ``scheme`` and the ``severity`` of a drift. :func:`check` turns an
inventory's members and the rules into :class:`FwFinding` values; nothing here does I/O.

Versions are compared by a tolerant parser (:func:`parse_version`), never as strings: a
version it cannot read is an ``unknown`` finding with the rule's severity, never a pass.
Real inventories (tests/fixtures/redfish/nvidia-nvfwupd, dmtf-rackmount1, dell-idrac-opi)
carry dotted decimals (``28.42.1000``), dotted hex (NVIDIA GPU/NVSwitch ``96.00.BC.00.01``),
vendor prefixes (``P79 v1.45``) and suffixes (``00.02.0192.0000_n00``, ``2.8.2-20-gfc1389898``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Severity = Literal["critical", "warning", "info"]
Status = Literal["ok", "drift", "unknown", "missing"]

#: runs of dotted numbers inside a version string ("P79 v1.45" holds "79" and "1.45")
_DOTTED = re.compile(r"\d+(?:\.\d+)*")
_HEX = re.compile(r"^[0-9A-Fa-f]+(?:\.[0-9A-Fa-f]+)+$")


class FirmwareRule(BaseModel):
    """One component's expectation, as written in the SKU's config context."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    component: str                      # what people call it: "GPU VBIOS", "BMC"...
    #: regex searched in the member's Id and in its Name (Dell's Ids carry the version)
    match: str
    min: str | None = None
    exact: str | None = None
    #: "dotted": decimal numbers (the longest dotted run of the string); "hex": every
    #: dot-separated part is hexadecimal (NVIDIA GPU and NVSwitch firmware)
    scheme: Literal["dotted", "hex"] = "dotted"
    severity: Severity = "warning"
    #: how many members must match (8 GPUs); None: at least one
    count: int | None = Field(default=None, ge=0)
    #: the update package a SimpleUpdate may apply (ImageURI); none: drift is only reported
    image: str | None = None

    @field_validator("match")
    @classmethod
    def _regex(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return v

    @model_validator(mode="after")
    def _one_bound(self) -> FirmwareRule:
        if (self.min is None) == (self.exact is None):
            raise ValueError("give exactly one of min or exact")
        wanted = self.min if self.min is not None else self.exact
        if parse_version(str(wanted), self.scheme) is None:
            raise ValueError(f"version {wanted!r} cannot be read with scheme {self.scheme}")
        return self

    @property
    def wanted(self) -> str:
        return f">= {self.min}" if self.min is not None else f"== {self.exact}"

    def matches(self, member: Member) -> bool:
        return bool(re.search(self.match, member.id) or (member.name and re.search(self.match, member.name)))


@dataclass(frozen=True)
class Member:
    """One FirmwareInventory member as the policy needs it."""

    id: str
    name: str | None
    version: str | None
    uri: str = ""
    updateable: bool | None = None


@dataclass(frozen=True)
class FwFinding:
    component: str
    status: Status
    severity: Severity
    wanted: str
    member: str = ""            # the member's Id ("" for a missing component)
    found: str | None = None
    uri: str = ""
    image: str | None = None
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    @property
    def blocking(self) -> bool:
        return not self.passed and self.severity == "critical"

    @property
    def updatable(self) -> bool:
        """A drift an update may fix: the rule names an image and the member is known."""
        return self.status in ("drift", "unknown") and bool(self.image) and bool(self.uri)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def parse_version(text: str, scheme: str = "dotted") -> tuple[int, ...] | None:
    """The comparable parts of a version string, or None when it cannot be read.

    ``dotted``: the longest run of dot-separated decimal numbers in the string (prefixes and
    suffixes are labels); two different runs of that length make it ambiguous (None).
    ``hex``: the whole string is dot-separated hexadecimal parts."""
    text = (text or "").strip()
    if not text:
        return None
    if scheme == "hex":
        return tuple(int(p, 16) for p in text.split(".")) if _HEX.match(text) else None
    runs = _DOTTED.findall(text)
    if not runs:
        return None
    longest = max(r.count(".") for r in runs)
    best = [r for r in runs if r.count(".") == longest]
    if len(best) > 1 and longest > 0:
        return None
    return tuple(int(p) for p in best[0].split("."))


def compare(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """-1, 0, 1 like a <=> b, the shorter padded with zeros (1.2 == 1.2.0)."""
    n = max(len(a), len(b))
    pa, pb = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (pa > pb) - (pa < pb)


def judge(rule: FirmwareRule, version: str | None) -> tuple[Status, str]:
    """(status, message) of one member's version against one rule."""
    if version is None or not version.strip():
        return "unknown", "the BMC reports no version"
    if rule.exact is not None and version.strip() == rule.exact.strip():
        return "ok", ""
    got = parse_version(version, rule.scheme)
    if got is None:
        return "unknown", f"version {version!r} cannot be read as a {rule.scheme} version"
    bound = rule.min if rule.min is not None else rule.exact
    want = parse_version(str(bound), rule.scheme)
    assert want is not None  # noqa: S101  (the rule validated it)
    c = compare(got, want)
    if rule.min is not None:
        return ("ok", "") if c >= 0 else ("drift", f"{version} is older than the minimum {rule.min}")
    return ("ok", "") if c == 0 else ("drift", f"{version} is not the required {rule.exact}")


def check(members: list[Member], rules: list[FirmwareRule]) -> list[FwFinding]:
    """Every rule against every member it matches; a rule matching too few is ``missing``."""
    out: list[FwFinding] = []
    for rule in rules:
        matched = [m for m in members if rule.matches(m)]
        for m in matched:
            status, message = judge(rule, m.version)
            out.append(FwFinding(component=rule.component, status=status,
                                 severity="info" if status == "ok" else rule.severity, wanted=rule.wanted,
                                 member=m.id, found=m.version, uri=m.uri, image=rule.image, message=message))
        need = rule.count if rule.count is not None else 1
        if len(matched) < need:
            out.append(FwFinding(component=rule.component, status="missing", severity=rule.severity,
                                 wanted=rule.wanted, image=None,
                                 message=f"{len(matched)} firmware inventory member(s) match {rule.match!r}, "
                                         f"{need} expected"))
    return out


def reasons(findings: list[FwFinding]) -> list[str]:
    """One line per blocking finding: component, member, found and wanted versions."""
    return [f"firmware {f.component}" + (f" ({f.member})" if f.member else "")
            + f": found {f.found or 'nothing'}, wanted {f.wanted}" + (f" ({f.message})" if f.message else "")
            for f in findings if f.blocking]


def summary(findings: list[FwFinding]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.status] = counts.get(f.status, 0) + 1
    return counts
