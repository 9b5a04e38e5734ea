"""The lab's nvidia-smi stand-in prints what the real one prints for the queries bringup
and the lab's kubelet make (layouts as in tests/fixtures/nvidia-smi)."""

from __future__ import annotations

import sys
from pathlib import Path

from bringup.admission.smoke import parse_device_query

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "lab" / "gpu" / "tools"))
import standin_fabric

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "nvidia-smi"
P = {"gpu_count": 2, "gpu_name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "driver": "570.133.20",
     "uuids": ["GPU-aaaa", "GPU-bbbb"], "serials": ["1650", "1651"]}


def run(capsys, *argv):
    rc = standin_fabric.nvidia_smi(P, list(argv))
    return rc, capsys.readouterr().out


def test_list(capsys):
    rc, out = run(capsys, "-L")
    assert rc == 0 and out.splitlines() == ["GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)",
                                            "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbb)"]


def test_query_with_header_matches_the_recorded_layout(capsys):
    rc, out = run(capsys, "--query-gpu=index,name,memory.total", "--format=csv")
    recorded = (FIX / "query-h100-header.csv").read_text().splitlines()
    assert rc == 0 and out.splitlines()[:2] == recorded


def test_smoke_pod_query_reads_back(capsys):
    rc, out = run(capsys, "--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader")
    rows = parse_device_query(out)
    assert rc == 0 and [r.index for r in rows] == [0, 1] and rows[0].driver == "570.133.20"


def test_unknown_field_is_refused(capsys):
    rc, out = run(capsys, "--query-gpu=index,bogus", "--format=csv")
    assert rc == 2 and 'Field "bogus" is not a valid field to query.' in out


def test_a_broken_container_toolkit_answers_as_recorded_inside_containers_only(capsys, monkeypatch):
    broken = {**P, "container_nvml_broken": True}
    monkeypatch.delenv("BRINGUP_LAB_CONTAINER", raising=False)
    assert standin_fabric.nvidia_smi(broken, ["-L"]) == 0  # the host is fine
    capsys.readouterr()
    monkeypatch.setenv("BRINGUP_LAB_CONTAINER", "1")
    assert standin_fabric.nvidia_smi(broken, ["-L"]) == 255
    assert capsys.readouterr().out == (FIX / "container-nvml-unknown-error.txt").read_text()
