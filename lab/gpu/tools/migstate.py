"""Read the MIG state the lab's NVML stand-in keeps (lab/gpu/nvml_mig.c), for the node tool
stand-ins (``nvidia-smi -L`` lists the MIG devices). Standard library only: it runs on the
simulated node beside standin.py.

The file is ``mig-state.json`` in the folder of ``$BRINGUP_NVML_PROFILE``: a flat JSON
object the library rewrites atomically (temp file + rename) after every MIG change, so a
reader sees the whole state before or after one. Keys (``<i>``: NVML GPU index, ``<g>``:
GPU instance id, ``<c>``: compute instance id; absent means 0 / none)::

    gpu.<i>.current_mode, gpu.<i>.pending_mode        0 | 1
    gpu.<i>.gi.<g>.profile / .start / .size / .name   a GPU instance: profile id, placement
                                                      (memory slices), profile name "1g.10gb"
    gpu.<i>.gi.<g>.ci.<c>.profile / .start / .size    a compute instance: compute profile id,
    gpu.<i>.gi.<g>.ci.<c>.name / .uuid                placement, the MIG device's name as
                                                      nvidia-smi shows it ("1g.10gb",
                                                      "1c.3g.40gb") and its "MIG-..." UUID
"""

import json
import os
import re

STATE_FILE = "mig-state.json"
_KEY = re.compile(r"^gpu\.(\d+)\.(?:gi\.(\d+)\.(?:ci\.(\d+)\.)?)?([a-z_]+)$")


def state_path(environ=None):
    """The state file next to the node's NVML profile, or None where there is none."""
    env = os.environ if environ is None else environ
    prof = env.get("BRINGUP_NVML_PROFILE")
    return os.path.join(os.path.dirname(prof), STATE_FILE) if prof else None


def load(path):
    """``{gpu: {"current_mode", "pending_mode", "instances": {gi_id: {"profile", "start",
    "size", "name", "computes": {ci_id: {"profile", "start", "size", "name", "uuid"}}}}}}``;
    ``{}`` without a file (nothing was ever changed: MIG off everywhere)."""
    if not path or not os.path.exists(path):
        return {}
    with open(path) as fh:
        flat = json.load(fh)
    state = {}
    for key, value in flat.items():
        m = _KEY.match(key)
        if not m:
            continue  # a key a later library adds: not ours to read
        gpu, gi, ci, field = int(m[1]), m[2], m[3], m[4]
        g = state.setdefault(gpu, {"current_mode": 0, "pending_mode": 0, "instances": {}})
        if gi is None:
            g[field] = value
            continue
        inst = g["instances"].setdefault(int(gi), {"computes": {}})
        target = inst if ci is None else inst["computes"].setdefault(int(ci), {})
        target[field] = value
    return state


def mig_devices(state, gpu):
    """GPU ``gpu``'s MIG devices (one per compute instance) in the order NVML numbers them,
    GPU instance id then compute instance id: ``[{"gi", "ci", "name", "uuid"}]``; none while
    its MIG mode is not on."""
    g = state.get(gpu)
    if not g or g.get("current_mode") != 1:
        return []
    return [{"gi": gi, "ci": ci, "name": c.get("name", ""), "uuid": c.get("uuid", "")}
            for gi, inst in sorted(g["instances"].items()) for ci, c in sorted(inst["computes"].items())]
