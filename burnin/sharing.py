"""``python3 -m burnin sharing (--mig GEOMETRY | --mig-off) [--out RESULT.json]``: the
node's MIG state set through NVML and read back (issue #28, item 4).

``--mig '{"1g.18gb": 7}'`` cuts every GPU by the geometry (MIG device profile -> count
per GPU): MIG mode enabled where it is not, the GPU instances and compute instances
already there destroyed (a re-apply starts from nothing, so the result is the geometry
and only it), then the GPU instances placed together (NVML's possible placements, a
depth-first search) and created there, each with one compute instance spanning it, as
``nvidia-smi mig -cgi ... -C`` does. ``--mig-off`` destroys every instance and disables
MIG mode. Profile names are resolved by NVML's own profile names (``MIG 1g.18gb``), so the
controller never sends a profile id that depends on the GPU model.

A GPU whose mode stays pending (NVML answers ``activationStatus`` "GPU requires
restart": in use, or a platform where the driver cannot reset it) is an error for that
GPU, with NVML's words; so is a geometry that reads back different from what was asked.
The document lists each GPU's mode (current, pending) and instances as read back after
the work, so the controller judges what NVML says, not what was attempted. Exit status:
0 every GPU as asked, 1 some GPU not, 2 bad arguments or no NVML.
"""

import ctypes
import json
from typing import Any

from .nvml import Nvml, NvmlFailure, Unsupported

MAX_INSTANCES = 8   # an A100/H100/H200 holds at most 7 GPU instances; room for one more


def _profiles(nv: Nvml, h: Any) -> dict[str, Any]:
    """NVML's GPU instance profiles of the device, by name (``1g.18gb``)."""
    p = nv.pynvml
    found: dict[str, Any] = {}
    for enum in range(p.NVML_GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = nv.call("nvmlDeviceGetGpuInstanceProfileInfo", h, enum)
        except (Unsupported, NvmlFailure):
            continue  # a profile this GPU does not have (NVML: not supported / invalid argument)
        name = info.name.decode() if isinstance(info.name, bytes) else str(info.name)
        found[name.removeprefix("MIG ").strip()] = info
    return found


def _gpu_instances(nv: Nvml, h: Any, profile_id: int) -> list[Any]:
    p = nv.pynvml
    arr = (p.c_nvmlGpuInstance_t * MAX_INSTANCES)()
    count = ctypes.c_uint(0)
    nv.call("nvmlDeviceGetGpuInstances", h, profile_id, arr, ctypes.byref(count))
    return list(arr[: count.value])


def _compute_profile_ids(nv: Nvml, gi: Any) -> list[int]:
    p = nv.pynvml
    ids = []
    for enum in range(p.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
        try:
            ids.append(nv.call("nvmlGpuInstanceGetComputeInstanceProfileInfo", gi, enum,
                               p.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED).id)
        except (Unsupported, NvmlFailure):
            continue
    return sorted(set(ids))


def _possible(nv: Nvml, h: Any, profile_id: int) -> list[tuple[int, int]] | None:
    """NVML's possible placements (start, size in memory slices) of a profile; None when
    the driver cannot list them."""
    p = nv.pynvml
    arr = (p.c_nvmlGpuInstancePlacement_t * MAX_INSTANCES)()
    count = ctypes.c_uint(MAX_INSTANCES)   # the array's room, where the driver reads it
    try:
        nv.call("nvmlDeviceGetGpuInstancePossiblePlacements", h, profile_id, arr, ctypes.byref(count))
    except Unsupported:
        return None
    return [(arr[i].start, arr[i].size) for i in range(count.value)]


def plan_placements(wanted: list[tuple[str, list[tuple[int, int]]]]) -> list[tuple[str, int, int]] | None:
    """One placement per instance (name, start, size) none overlapping, or None when the
    instances do not fit together. Created without placements, NVML places each where it
    likes, and an early wide one can leave no room for the rest (2 x 1g + 2g + 3g fits
    only with the 3g at the top): so the whole set is placed first, depth-first, widest
    first (at most 7 instances on 8 slices: the search is tiny)."""
    order = sorted(wanted, key=lambda w: -max((size for _, size in w[1]), default=0))

    def place(i: int, used: int) -> list[tuple[str, int, int]] | None:
        if i == len(order):
            return []
        name, options = order[i]
        for start, size in options:
            mask = ((1 << size) - 1) << start
            if not used & mask:
                rest = place(i + 1, used | mask)
                if rest is not None:
                    return [(name, start, size), *rest]
        return None
    return place(0, 0)


def _create(nv: Nvml, h: Any, profiles: dict[str, Any], geometry: dict[str, int]) -> str | None:
    """Create the geometry's instances, each with one compute instance spanning it; an
    error text when it cannot be placed."""
    p = nv.pynvml
    names = [n for n in sorted(geometry) for _ in range(geometry[n])]
    options = {n: _possible(nv, h, profiles[n].id) for n in geometry}
    if all(o is not None for o in options.values()):
        plan = plan_placements([(n, options[n]) for n in names])
        if plan is None:
            return (f"no placement of {geometry} fits the GPU (NVML's possible placements: "
                    + "; ".join(f"{n}: {options[n]}" for n in geometry) + ")")
        created = []
        for name, start, size in plan:
            placement = p.c_nvmlGpuInstancePlacement_t(start, size)
            created.append((name, nv.call("nvmlDeviceCreateGpuInstanceWithPlacement", h, profiles[name].id,
                                          ctypes.byref(placement))))
    else:  # a driver without placements: NVML places them, widest first
        created = [(n, nv.call("nvmlDeviceCreateGpuInstance", h, profiles[n].id))
                   for n in sorted(names, key=lambda n: -profiles[n].sliceCount)]
    for name, gi in created:
        ci_enum = getattr(p, f"NVML_COMPUTE_INSTANCE_PROFILE_{profiles[name].sliceCount}_SLICE")
        cinfo = nv.call("nvmlGpuInstanceGetComputeInstanceProfileInfo", gi, ci_enum,
                        p.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        nv.call("nvmlGpuInstanceCreateComputeInstance", gi, cinfo.id)
    return None


def _clear(nv: Nvml, h: Any, profiles: dict[str, Any]) -> None:
    """Destroy every compute instance and GPU instance of the device."""
    p = nv.pynvml
    for info in profiles.values():
        for gi in _gpu_instances(nv, h, info.id):
            for cid in _compute_profile_ids(nv, gi):
                arr = (p.c_nvmlComputeInstance_t * MAX_INSTANCES)()
                count = ctypes.c_uint(0)
                nv.call("nvmlGpuInstanceGetComputeInstances", gi, cid, arr, ctypes.byref(count))
                for ci in arr[: count.value]:
                    nv.call("nvmlComputeInstanceDestroy", ci)
            nv.call("nvmlGpuInstanceDestroy", gi)


def _read_back(nv: Nvml, h: Any, profiles: dict[str, Any]) -> dict[str, int]:
    counts = {}
    for name, info in profiles.items():
        n = len(_gpu_instances(nv, h, info.id))
        if n:
            counts[name] = n
    return counts


def _mode(nv: Nvml, h: Any) -> tuple[int, int]:
    current, pending = nv.call("nvmlDeviceGetMigMode", h)
    return int(current), int(pending)


def _set_mode(nv: Nvml, h: Any, want: int, doc: dict[str, Any]) -> bool:
    """Mode ``want`` current on the device; False (with the error in ``doc``) if it stays pending."""
    current, _ = _mode(nv, h)
    if current != want:
        status = nv.call("nvmlDeviceSetMigMode", h, want)
        doc["activation"] = nv.pynvml.nvmlErrorString(status) if status else "Success"
        if isinstance(doc["activation"], bytes):
            doc["activation"] = doc["activation"].decode()
        current, _ = _mode(nv, h)
    if current != want:
        doc["error"] = (f"MIG mode is pending {'enable' if want else 'disable'} "
                        f"(NVML: {doc.get('activation', 'no activation status')}): the GPU needs a reset or a reboot")
        return False
    return True


def _apply_one(nv: Nvml, index: int, geometry: dict[str, int] | None) -> dict[str, Any]:
    h = nv.call("nvmlDeviceGetHandleByIndex", index)
    doc: dict[str, Any] = {"index": index}
    try:
        want = 1 if geometry else 0
        current, _ = _mode(nv, h)
        if current:
            _clear(nv, h, _profiles(nv, h))
        if _set_mode(nv, h, want, doc) and geometry:
            # NVML lists a GPU's instance profiles once MIG mode is on
            profiles = _profiles(nv, h)
            unknown = sorted(set(geometry) - set(profiles))
            if unknown:
                doc["error"] = (f"no MIG profile {', '.join(unknown)} on this GPU "
                                f"(it has {', '.join(profiles) or 'none'})")
            elif problem := _create(nv, h, profiles, geometry):
                doc["error"] = problem
    except (Unsupported, NvmlFailure, AttributeError) as exc:
        doc["error"] = str(exc)
    try:
        doc["current"], doc["pending"] = _mode(nv, h)
        doc["instances"] = _read_back(nv, h, _profiles(nv, h)) if doc["current"] else {}
    except (Unsupported, NvmlFailure) as exc:
        doc.setdefault("error", f"reading the MIG state back: {exc}")
    if "error" not in doc and geometry and doc["instances"] != geometry:
        doc["error"] = f"instances read back {doc['instances']}, asked for {geometry}"
    return doc


def apply(geometry: dict[str, int] | None) -> tuple[int, dict[str, Any]]:
    """(exit status, document) of applying ``geometry`` to every GPU (None: MIG off)."""
    nv = Nvml()
    doc: dict[str, Any] = {"schema_version": 1, "mig": geometry}
    if not nv.ok:
        doc["error"] = nv.error
        return 2, doc
    try:
        count = nv.call("nvmlDeviceGetCount")
        doc["gpus"] = [_apply_one(nv, i, geometry) for i in range(count)]
    except (Unsupported, NvmlFailure) as exc:
        doc["error"] = str(exc)
        return 1, doc
    finally:
        nv.shutdown()
    return (1 if any("error" in g for g in doc["gpus"]) else 0), doc


def parse_geometry(text: str) -> dict[str, int]:
    """``{"1g.18gb": 7}`` -> the geometry; anything else is a ValueError saying so."""
    value = json.loads(text)
    if (not isinstance(value, dict) or not value
            or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v > 0
                       for k, v in value.items())):
        raise ValueError(f"--mig wants a JSON object of profile: count >= 1, not {text!r}")
    return value
