"""The MIG state reader the node tool stand-ins use (lab/gpu/tools/migstate.py): the flat
file nvml_mig.c writes, read back as GPUs, GPU instances and MIG devices."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "lab" / "gpu" / "tools"))
import migstate

FLAT = {
    "gpu.0.current_mode": 1, "gpu.0.pending_mode": 1,
    "gpu.0.gi.13.profile": 19, "gpu.0.gi.13.start": 6, "gpu.0.gi.13.size": 1, "gpu.0.gi.13.name": "1g.10gb",
    "gpu.0.gi.13.ci.0.profile": 0, "gpu.0.gi.13.ci.0.start": 0, "gpu.0.gi.13.ci.0.size": 1,
    "gpu.0.gi.13.ci.0.name": "1g.10gb", "gpu.0.gi.13.ci.0.uuid": "MIG-bbbb",
    "gpu.0.gi.1.profile": 9, "gpu.0.gi.1.start": 0, "gpu.0.gi.1.size": 4, "gpu.0.gi.1.name": "3g.40gb",
    "gpu.0.gi.1.ci.1.profile": 0, "gpu.0.gi.1.ci.1.name": "1c.3g.40gb", "gpu.0.gi.1.ci.1.uuid": "MIG-aaa1",
    "gpu.0.gi.1.ci.0.profile": 1, "gpu.0.gi.1.ci.0.name": "2c.3g.40gb", "gpu.0.gi.1.ci.0.uuid": "MIG-aaa0",
    "gpu.1.current_mode": 0, "gpu.1.pending_mode": 1,
    "some.future.key": 3,
}


def write(tmp_path: Path, flat: dict) -> Path:
    path = tmp_path / "mig-state.json"
    path.write_text(json.dumps(flat))
    return path


def test_the_state_file_sits_beside_the_nvml_profile():
    assert migstate.state_path({"BRINGUP_NVML_PROFILE": "/n/var/lib/bringup-lab/nvml.json"}) == \
        "/n/var/lib/bringup-lab/mig-state.json"
    assert migstate.state_path({}) is None


def test_no_file_means_mig_off_everywhere(tmp_path):
    assert migstate.load(str(tmp_path / "mig-state.json")) == {} and migstate.load(None) == {}
    assert migstate.mig_devices({}, 0) == []


def test_modes_instances_and_compute_instances(tmp_path):
    state = migstate.load(str(write(tmp_path, FLAT)))
    assert (state[0]["current_mode"], state[1]["current_mode"], state[1]["pending_mode"]) == (1, 0, 1)
    gi = state[0]["instances"][13]
    assert (gi["profile"], gi["start"], gi["size"], gi["name"]) == (19, 6, 1, "1g.10gb")
    assert gi["computes"][0]["uuid"] == "MIG-bbbb"


def test_mig_devices_come_in_gpu_instance_then_compute_instance_order(tmp_path):
    state = migstate.load(str(write(tmp_path, FLAT)))
    assert [(d["gi"], d["ci"], d["name"], d["uuid"]) for d in migstate.mig_devices(state, 0)] == [
        (1, 0, "2c.3g.40gb", "MIG-aaa0"), (1, 1, "1c.3g.40gb", "MIG-aaa1"), (13, 0, "1g.10gb", "MIG-bbbb")]


def test_a_pending_mode_shows_no_mig_devices(tmp_path):
    flat = {**FLAT, "gpu.0.current_mode": 0}
    assert migstate.mig_devices(migstate.load(str(write(tmp_path, flat))), 0) == []
