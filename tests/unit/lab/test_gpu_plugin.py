"""The lab's device plugin and GFD stand-in (lab/kubeapi/bin/gpu_plugin.py) against what
NVIDIA's own plugin does: the README's time-slicing capacities and GFD's unit-test labels
(tests/fixtures/sharing/, recorded with their sources), and the MIG strategies."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
FIX = REPO / "tests" / "fixtures" / "sharing"
_spec = importlib.util.spec_from_file_location("gpu_plugin", REPO / "lab" / "kubeapi" / "bin" / "gpu_plugin.py")
gp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gp)

#: the keys the stand-in models (memory and slice counts are not in `nvidia-smi -L`)
KEYS = ("nvidia.com/gpu.count", "nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing-strategy",
        "nvidia.com/gpu.product", "nvidia.com/mig.strategy")


def gfd(case: str) -> dict[str, str]:
    labels = yaml.safe_load((FIX / "gfd-sharing-labels.yaml").read_text())[case]
    return {k: v for k, v in labels.items() if k in KEYS}


def picked(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k in KEYS}


@pytest.mark.parametrize("case", yaml.safe_load((FIX / "device-plugin-time-slicing.yaml").read_text()))
def test_time_slicing_capacity_is_the_readme_s(case):
    resources, _ = gp.advertise([("NVIDIA H100 80GB HBM3", [])] * case["gpus"], case["config"])
    assert resources == case["capacity"]


def test_labels_are_gfd_s_for_whole_time_sliced_and_single_mig_devices():
    _, labels = gp.advertise([("MOCKMODEL", [])], {})
    assert picked(labels) == gfd("none-1-device")
    ts = {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}}
    # GFD's case has two devices counted as 2 (the physical GPUs) under replicas 2
    resources, labels = gp.advertise([("MOCKMODEL", [])] * 2, ts)
    assert picked(labels) == gfd("time-slicing-2-devices") and resources == {"nvidia.com/gpu": 4}
    single = {"version": "v1", "flags": {"migStrategy": "single"}}
    resources, labels = gp.advertise([("MOCKMODEL", ["1g.100gb"]), ("MOCKMODEL", ["1g.100gb"])], single)
    assert picked(labels) == gfd("mig-single-2-devices") and resources == {"nvidia.com/gpu": 2}
    # single over a GPU without MIG and one with: GFD's invalid labels, nothing to hand out
    resources, labels = gp.advertise([("MOCKMODEL", ["1g.100gb"]), ("MOCKMODEL", [])], single)
    assert picked(labels) == gfd("mig-single-invalid") and resources == {"nvidia.com/gpu": 0}


def test_mixed_advertises_each_profile_and_the_gpus_without_mig():
    mixed = {"version": "v1", "flags": {"migStrategy": "mixed"}}
    gpus = [("NVIDIA H200", ["3g.71gb", "2g.35gb", "1g.18gb", "1g.18gb"])] * 7 + [("NVIDIA H200", [])]
    resources, labels = gp.advertise(gpus, mixed)
    assert resources == {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.18gb": 14, "nvidia.com/mig-2g.35gb": 7,
                         "nvidia.com/mig-3g.71gb": 7}
    assert labels["nvidia.com/mig.strategy"] == "mixed"
    assert labels["nvidia.com/mig-1g.18gb.product"] == "NVIDIA-H200-MIG-1g.18gb"
    assert labels["nvidia.com/mig-1g.18gb.count"] == "14"


def test_healthy_count_unreadable_config_and_no_gpus():
    ts = {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}}
    # the device plugin finds 7 of 8 healthy (fault device_plugin_short)
    assert gp.advertise([("NVIDIA H100 80GB HBM3", [])] * 8, ts, healthy=7)[0] == {"nvidia.com/gpu": 14}
    # a config the plugin cannot read: it does not start, nothing is advertised
    assert gp.advertise([("NVIDIA H100 80GB HBM3", [])] * 8, None) == ({}, {})
    assert gp.advertise([], {}) == ({}, {})
    assert gp.advertise([("X", [])], {"flags": {"migStrategy": "bogus"}}) == ({}, {})


def test_the_config_file_is_read_under_the_node_root(tmp_path, monkeypatch):
    monkeypatch.setenv("BRINGUP_SYSROOT", str(tmp_path))
    monkeypatch.delenv("BRINGUP_DEVICE_PLUGIN_CONFIG", raising=False)
    assert gp.read_config() == {}                      # no file: the plugin's defaults
    cfg = tmp_path / gp.CONFIG.lstrip("/")
    cfg.parent.mkdir(parents=True)
    cfg.write_text('{"version": "v1", "flags": {"migStrategy": "mixed"}}\n')
    assert gp.read_config()["flags"]["migStrategy"] == "mixed"
    cfg.write_text("version: v1\nflags: [\n")          # not JSON (bringup writes JSON)
    assert gp.read_config() is None
