"""GPU sharing per pool: whole GPUs, MIG slices or time-sliced GPUs (issue #28, item 4).

A pool's ``sharing`` (``bringup.admission.pool.Pool``) becomes a typed mode here:

- ``exclusive``: workloads get whole GPUs (``nvidia.com/gpu``: the SKU's count);
- ``mig``: every GPU cut by one geometry, a name from ``bringup/data/mig_profiles.yaml``
  or explicit ``profiles: {profile: count}``, checked to fit the SKU's GPU, and the device
  plugin's MIG strategy (``single``: the MIG devices as ``nvidia.com/gpu``, one profile
  only; ``mixed``: ``nvidia.com/mig-<profile>`` per profile);
- ``time-slicing``: ``replicas`` (>= 2) shares of each GPU, under ``nvidia.com/gpu`` or,
  with ``rename_by_default``, ``nvidia.com/gpu.shared``.

From a mode, pure functions render what applies it (the mig-parted config of the
geometry, the device plugin's sharing config), say what a node must then advertise
(:func:`expected`: allocatable resources and GPU Feature Discovery labels) and judge
what a node does advertise (:func:`judge_sharing`, the readiness gate's :class:`Check`
values). The resource names and label values follow NVIDIA/k8s-device-plugin
(``internal/lm``: ``<product>-SHARED`` unless renamed, ``<product>-MIG-<profile>``,
``replicas``, ``sharing-strategy``), recorded under ``tests/fixtures/sharing/``.

Applied during provisioning, judged by the gate step, modelled by the lab's NVML stand-in
and kubelet: not yet (a later change wires it). Nothing here does I/O but reading the
data file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bringup.admission.labels import gpu_product_label
from bringup.admission.pool import Pool
from bringup.admission.readiness import Check, Outcome
from bringup.errors import ParseError
from bringup.resources import data_file
from bringup.sku import SkuSpec
from bringup.yamlio import load_model

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"   # renameByDefault: <resource-name>.shared
MIG_PREFIX = "nvidia.com/mig-"
MODES = ("exclusive", "mig", "time-slicing")
Strategy = Literal["single", "mixed"]


# --- the data file -----------------------------------------------------------------------
class MigProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int = Field(ge=0)                 # nvidia-smi's GPU instance profile id
    compute: int = Field(ge=1)            # compute slices
    size: int = Field(ge=1)               # memory slices one instance takes
    starts: list[int] = Field(min_length=1)   # memory slices an instance may start at
    max: int = Field(ge=1)                # most instances of it on one GPU


class MigGpu(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pci_device_id: str
    compute_slices: int = Field(ge=1)
    memory_slices: int = Field(ge=1)
    profiles: dict[str, MigProfile] = Field(min_length=1)
    geometries: dict[str, dict[str, int]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> MigGpu:
        for name, p in self.profiles.items():
            if any(s + p.size > self.memory_slices for s in p.starts):
                raise ValueError(f"profile {name}: a placement runs past {self.memory_slices} memory slices")
        for name, geo in self.geometries.items():
            if unknown := sorted(set(geo) - set(self.profiles)):
                raise ValueError(f"geometry {name}: unknown profile(s) {', '.join(unknown)}")
            if problem := fit_problem(self, geo):
                raise ValueError(f"geometry {name}: {problem}")
        return self


class MigCatalogue(BaseModel):
    """``bringup/data/mig_profiles.yaml``: GPU model -> its MIG profiles and geometries."""

    model_config = ConfigDict(extra="forbid")
    gpus: dict[str, MigGpu]


def load_catalogue(path: Path | None = None) -> MigCatalogue:
    """The MIG catalogue; a bad key or value is a ConfigError naming it (file:line)."""
    return load_model(path or data_file("mig_profiles.yaml"), MigCatalogue, "MIG profile catalogue")


@lru_cache(maxsize=1)
def _shipped_catalogue() -> MigCatalogue:
    # the shipped file does not change while a process runs; a pool per node reads it once
    return load_catalogue()


def _place(items: list[tuple[int, list[int]]], used: int) -> bool:
    # depth-first over the instances, widest first: at most 7 instances on 8 slots, so
    # the search is tiny; a placement may not overlap one already taken (NVML's rule)
    if not items:
        return True
    size, starts = items[0]
    for start in starts:
        mask = ((1 << size) - 1) << start
        if not used & mask and _place(items[1:], used | mask):
            return True
    return False


def fit_problem(gpu: MigGpu, geometry: Mapping[str, int]) -> str | None:
    """Why ``geometry`` (profile -> count) does not fit one GPU, or None when it does."""
    compute = sum(gpu.profiles[p].compute * n for p, n in geometry.items())
    memory = sum(gpu.profiles[p].size * n for p, n in geometry.items())
    need = (f"{_describe(geometry)} need {compute} compute and {memory} memory slices "
            f"(one GPU has {gpu.compute_slices} and {gpu.memory_slices})")
    for p, n in geometry.items():
        if n > gpu.profiles[p].max:
            return f"{need}, but at most {gpu.profiles[p].max} x {p} fit one GPU"
    if compute > gpu.compute_slices or memory > gpu.memory_slices:
        return f"{need}: more than one GPU has"
    items = sorted(((gpu.profiles[p].size, gpu.profiles[p].starts) for p, n in geometry.items()
                    for _ in range(n)), key=lambda i: -i[0])
    if not _place(items, 0):
        starts = "; ".join(f"{p} starts at {{{','.join(map(str, gpu.profiles[p].starts))}}} and takes "
                           f"{gpu.profiles[p].size}" for p in geometry)
        return f"{need}, but no placement of them fits the {gpu.memory_slices} memory slices ({starts})"
    return None


def _describe(geometry: Mapping[str, int]) -> str:
    return " + ".join(f"{n} x {p}" for p, n in geometry.items())


# --- the modes ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Exclusive:
    kind: Literal["exclusive"] = "exclusive"

    def describe(self) -> str:
        return "exclusive (whole GPUs)"


@dataclass(frozen=True)
class Mig:
    geometry: str                       # the data file's name, or "custom"
    profiles: tuple[tuple[str, int], ...]   # MIG devices per GPU, in the order given
    strategy: Strategy
    kind: Literal["mig"] = "mig"

    def describe(self) -> str:
        return f"mig {self.geometry} ({_describe(dict(self.profiles))} per GPU), strategy {self.strategy}"


@dataclass(frozen=True)
class TimeSlicing:
    replicas: int
    rename_by_default: bool = False
    # the device plugin defaults this to false for compatibility and recommends true: a
    # request of more than one replica buys no more of the GPU (its README)
    fail_requests_greater_than_one: bool = True
    kind: Literal["time-slicing"] = "time-slicing"

    def describe(self) -> str:
        return f"time-slicing x{self.replicas}" + (" (renamed .shared)" if self.rename_by_default else "")


SharingMode = Exclusive | Mig | TimeSlicing


def _bad(field: str, message: str, source: str, hint: str = "") -> ParseError:
    return ParseError(message, path=f"bringup_pool.{field}", source=source or "pool", hint=hint)


def _keys(section: Mapping[str, Any], field: str, allowed: tuple[str, ...], source: str) -> None:
    if unknown := sorted(set(section) - set(allowed)):
        raise _bad(f"{field}.{unknown[0]}", f"unknown key (known: {', '.join(allowed)})", source)


def _flag(section: Mapping[str, Any], key: str, default: bool, source: str) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise _bad(f"time_slicing.{key}", f"{value!r} is not true or false", source)
    return value


def sharing_mode(pool: Pool, sku: SkuSpec, *, catalogue: MigCatalogue | None = None,
                 source: str = "") -> SharingMode:
    """The pool's sharing mode for nodes of ``sku``; bad input is one ParseError naming
    the field (``bringup_pool.mig.geometry``) and what to write instead."""
    if pool.sharing not in MODES:
        raise _bad("sharing", f"{pool.sharing!r} is not a sharing mode (one of {', '.join(MODES)})", source)
    for field, wanted in (("mig", "mig"), ("time_slicing", "time-slicing")):
        if getattr(pool, field) is not None and pool.sharing != wanted:
            raise _bad(field, f"given, but sharing is {pool.sharing!r}", source,
                       hint=f"set sharing: {wanted} or remove the {field} section")
    if pool.sharing == "exclusive":
        return Exclusive()
    if pool.sharing == "time-slicing":
        return _time_slicing(pool.time_slicing, source)
    return _mig(pool.mig, sku, catalogue or _shipped_catalogue(), source)


def _time_slicing(section: dict[str, Any] | None, source: str) -> TimeSlicing:
    if not section:
        raise _bad("time_slicing", "missing: time-slicing needs replicas per GPU",
                   source, hint="add time_slicing: {replicas: 4}")
    _keys(section, "time_slicing", ("replicas", "rename_by_default", "fail_requests_greater_than_one"), source)
    replicas = section.get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 2:
        raise _bad("time_slicing.replicas", f"{replicas!r} is not a whole number of replicas >= 2",
                   source, hint="one replica is a whole GPU: use sharing: exclusive")
    return TimeSlicing(replicas=replicas,
                       rename_by_default=_flag(section, "rename_by_default", False, source),
                       fail_requests_greater_than_one=_flag(section, "fail_requests_greater_than_one", True, source))


def _mig(section: dict[str, Any] | None, sku: SkuSpec, catalogue: MigCatalogue, source: str) -> Mig:
    if not section:
        raise _bad("mig", "missing: MIG needs a geometry and a strategy", source,
                   hint="add mig: {geometry: all-balanced, strategy: mixed}")
    _keys(section, "mig", ("geometry", "profiles", "strategy"), source)
    model = sku.gpu.model
    gpu = catalogue.gpus.get(model)
    if gpu is None:
        raise _bad("mig", f"SKU {sku.sku}'s GPU {model!r} has no MIG profiles in bringup/data/mig_profiles.yaml "
                          f"(known: {', '.join(sorted(catalogue.gpus))})", source)
    strategy = section.get("strategy")
    if strategy not in ("single", "mixed"):
        raise _bad("mig.strategy", f"{strategy!r} is not a MIG strategy (single or mixed)", source,
                   hint="mixed advertises nvidia.com/mig-<profile>; single, one profile as nvidia.com/gpu")
    if ("geometry" in section) == ("profiles" in section):
        raise _bad("mig", "give either geometry (a name) or profiles (profile: count per GPU), not "
                          + ("both" if "geometry" in section else "neither"), source)
    if "geometry" in section:
        name = section["geometry"]
        if name not in gpu.geometries:
            raise _bad("mig.geometry", f"{name!r} is not a geometry of the {model} "
                                       f"(known: {', '.join(gpu.geometries)})", source)
        profiles, field = dict(gpu.geometries[name]), "mig.geometry"
    else:
        name, profiles, field = "custom", section["profiles"], "mig.profiles"
        if not isinstance(profiles, dict) or not profiles:
            raise _bad(field, f"{profiles!r} is not a mapping of profile: count", source)
        for p, n in profiles.items():
            if p not in gpu.profiles:
                raise _bad(f"{field}.{p}", f"not a MIG profile of the {model} (known: {', '.join(gpu.profiles)})",
                           source)
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise _bad(f"{field}.{p}", f"{n!r} is not a count >= 1", source)
    if problem := fit_problem(gpu, profiles):
        raise _bad(field, f"does not fit one {model}: {problem}", source,
                   hint="see bringup/data/mig_profiles.yaml for the profiles and named geometries")
    if strategy == "single" and len(profiles) > 1:
        raise _bad("mig.strategy", f"single needs one profile on every GPU; {name} has {len(profiles)} "
                                   f"({_describe(profiles)})", source, hint="use strategy: mixed")
    return Mig(geometry=name, profiles=tuple(profiles.items()), strategy=strategy)


# --- what applies a mode -----------------------------------------------------------------
def render_mig_parted(mode: Mig, name: str | None = None) -> dict[str, Any]:
    """The mig-parted config (``version: v1``, ``mig-configs``) of the mode's geometry, one
    named config cutting every GPU the same."""
    return {"version": "v1", "mig-configs": {name or mode.geometry: [
        {"devices": "all", "mig-enabled": True, "mig-devices": dict(mode.profiles)}]}}


def render_device_plugin_sharing(mode: TimeSlicing) -> dict[str, Any]:
    """The device plugin's config (``version: v1``, ``sharing.timeSlicing``) for the mode."""
    return {"version": "v1", "sharing": {"timeSlicing": {
        "renameByDefault": mode.rename_by_default,
        "failRequestsGreaterThanOne": mode.fail_requests_greater_than_one,
        "resources": [{"name": GPU, "replicas": mode.replicas}]}}}


# --- what a node must then advertise ----------------------------------------------------
@dataclass(frozen=True)
class ExpectedSharing:
    """Allocatable GPU resources and GFD labels a node of the pool must show, exactly."""

    mode: str                           # the mode, described for the reasons
    resources: Mapping[str, int]
    labels: Mapping[str, str]


def expected(mode: SharingMode, sku: SkuSpec) -> ExpectedSharing:
    """What a node of ``sku`` advertises once ``mode`` took (NVIDIA's device plugin and
    GPU Feature Discovery, internal/lm)."""
    count, product = sku.gpu.count, gpu_product_label(sku.gpu.model)
    if isinstance(mode, Exclusive):
        return ExpectedSharing(mode.describe(), {GPU: count}, {
            f"{GPU}.count": str(count), f"{GPU}.product": product,
            f"{GPU}.replicas": "1", f"{GPU}.sharing-strategy": "none"})
    if isinstance(mode, TimeSlicing):
        # labels keep the resource's own name; the product says SHARED unless the
        # resource name already does (renameByDefault)
        return ExpectedSharing(mode.describe(), {GPU_SHARED if mode.rename_by_default else GPU: count * mode.replicas}, {
            f"{GPU}.count": str(count),
            f"{GPU}.product": product if mode.rename_by_default else f"{product}-SHARED",
            f"{GPU}.replicas": str(mode.replicas), f"{GPU}.sharing-strategy": "time-slicing"})
    if mode.strategy == "single":
        (profile, per_gpu), = mode.profiles
        total = count * per_gpu
        return ExpectedSharing(mode.describe(), {GPU: total}, {
            "nvidia.com/mig.strategy": "single", f"{GPU}.count": str(total),
            f"{GPU}.product": f"{product}-MIG-{profile}",
            f"{GPU}.replicas": "1", f"{GPU}.sharing-strategy": "none"})
    resources: dict[str, int] = {}
    labels = {"nvidia.com/mig.strategy": "mixed"}
    for profile, per_gpu in mode.profiles:
        res = f"{MIG_PREFIX}{profile}"
        resources[res] = count * per_gpu
        labels.update({f"{res}.count": str(count * per_gpu), f"{res}.product": f"{product}-MIG-{profile}",
                       f"{res}.replicas": "1", f"{res}.sharing-strategy": "none"})
    return ExpectedSharing(mode.describe(), resources, labels)


# --- the gate's judgment -----------------------------------------------------------------
def _gpu_resource(name: str) -> bool:
    return name in (GPU, GPU_SHARED) or name.startswith(MIG_PREFIX)


def _quantity(raw: Any) -> int | None:
    text = str(raw).strip()
    return int(text) if re.fullmatch(r"\d+", text) else None


def judge_sharing(want: ExpectedSharing, allocatable: Mapping[str, Any],
                  labels: Mapping[str, str]) -> list[Check]:
    """Every expected resource and label, exactly, and no other GPU resource: an
    ``nvidia.com/gpu`` left on a MIG-mixed node means the geometry did not take. A
    resource that is missing fails; a label that is missing is ``unknown`` (GFD may not
    have run); neither ever passes."""
    checks: list[Check] = []
    for name, count in want.resources.items():
        raw = allocatable.get(name)
        if raw is None:
            checks.append(Check(f"sharing resource {name}", "fail",
                                f"the node advertises no {name}; {want.mode} needs {count}"))
            continue
        got = _quantity(raw)
        outcome: Outcome = "unknown" if got is None else ("pass" if got == count else "fail")
        detail = (f"allocatable {name} is {raw!r}, not a count" if got is None else
                  f"allocatable {name}: {got}" + ("" if got == count else f", {want.mode} needs {count}"))
        checks.append(Check(f"sharing resource {name}", outcome, detail))
    for name, raw in sorted(allocatable.items()):
        if name in want.resources or not _gpu_resource(name):
            continue
        got = _quantity(raw)
        # the kubelet keeps a resource a plugin stopped advertising at 0: that one is gone
        if got == 0:
            continue
        checks.append(Check(f"sharing resource {name}", "unknown" if got is None else "fail",
                            f"allocatable {name}: {raw} is not part of {want.mode}"
                            + (": the sharing mode did not take" if got is not None else "")))
    for key, value in want.labels.items():
        got_label = labels.get(key)
        if got_label is None:
            checks.append(Check(f"sharing label {key}", "unknown", f"{key} not set; {want.mode} needs {value!r}"))
        else:
            ok = got_label == value
            checks.append(Check(f"sharing label {key}", "pass" if ok else "fail",
                                f"{key}={got_label!r}" + ("" if ok else f", {want.mode} needs {value!r}")))
    return checks


__all__ = ["Exclusive", "ExpectedSharing", "Mig", "MigCatalogue", "SharingMode", "TimeSlicing",
           "expected", "fit_problem", "judge_sharing", "load_catalogue", "render_device_plugin_sharing",
           "render_mig_parted", "sharing_mode"]
