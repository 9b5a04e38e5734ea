"""The agent's ``sharing`` command on the NVML stand-in through the real pynvml, as the
share step runs it on a node: a mixed geometry that fits only when placed as a whole, a
re-apply that replaces the old geometry, MIG off again, and a GPU whose MIG mode stays
pending (the ``mig_pending`` fault)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bringup.sku import load_skus
from lab.fleet import Fault, NodeSpec
from lab.gpu import build_nvml
from lab.gpu.profile import nvml_profile

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
BALANCED = {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}


@pytest.fixture
def agent(tmp_path):
    lib = build_nvml(tmp_path / "build")

    def make(*faults: dict) -> None:
        spec = NodeSpec(name="m1", rack="r1", sku="hgx-h200-141gb", pool="p", bmc_address="127.10.0.1",
                        address="127.20.0.1", faults=[Fault.model_validate(f) for f in faults])
        prof = nvml_profile(spec, load_skus()["hgx-h200-141gb"], {"driver": "570.133.20", "cuda": "12.8"})
        (tmp_path / "nvml.json").write_text(json.dumps(prof))

    def run(*args: str) -> tuple[int, dict]:
        env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(lib), "PYTHONPATH": str(REPO),
               "BRINGUP_NVML_PROFILE": str(tmp_path / "nvml.json")}
        proc = subprocess.run([sys.executable, "-m", "burnin", "sharing", *args], env=env, capture_output=True,
                              text=True, timeout=60, check=False, cwd=tmp_path)
        return proc.returncode, json.loads(proc.stdout)

    run.make = make
    return run


def test_a_mixed_geometry_is_placed_whole_replaced_and_taken_off(agent):
    agent.make()
    rc, doc = agent("--mig", json.dumps(BALANCED))
    assert rc == 0, doc
    assert len(doc["gpus"]) == 8
    assert all(g["current"] == 1 and g["instances"] == BALANCED and "error" not in g for g in doc["gpus"]), doc
    # applied again with another geometry: the old instances go, only the new ones stay
    rc, doc = agent("--mig", '{"1g.18gb": 7}')
    assert rc == 0 and all(g["instances"] == {"1g.18gb": 7} for g in doc["gpus"]), doc
    rc, doc = agent("--mig-off")
    assert rc == 0 and all(g["current"] == 0 and g["instances"] == {} for g in doc["gpus"]), doc


def test_a_geometry_that_does_not_fit_and_a_profile_the_gpu_lacks(agent):
    agent.make()
    rc, doc = agent("--mig", '{"4g.71gb": 2}')
    assert rc == 1 and all("no placement" in g["error"] for g in doc["gpus"]), doc
    rc, doc = agent("--mig", '{"1g.10gb": 7}')          # an H100 profile, not an H200 one
    assert rc == 1 and "no MIG profile 1g.10gb on this GPU" in doc["gpus"][0]["error"], doc


def test_a_gpu_whose_mig_mode_stays_pending_is_an_error_with_nvml_s_words(agent):
    agent.make({"kind": "mig_pending", "gpu": 3})
    rc, doc = agent("--mig", json.dumps(BALANCED))
    assert rc == 1
    bad = [g for g in doc["gpus"] if "error" in g]
    assert [g["index"] for g in bad] == [3], doc
    assert bad[0]["error"].startswith("MIG mode is pending enable (NVML: GPU requires restart)"), bad
    assert bad[0]["current"] == 0 and bad[0]["pending"] == 1 and bad[0]["instances"] == {}
    assert all(g["instances"] == BALANCED for g in doc["gpus"] if g["index"] != 3)
