"""The lab's nvidia-smi stand-in prints what the real one prints for the queries bringup
and the lab's kubelet make (layouts as in tests/fixtures/nvidia-smi)."""

from __future__ import annotations

import json
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


def test_list(capsys, monkeypatch):
    monkeypatch.delenv("BRINGUP_NVML_PROFILE", raising=False)
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


def _mig_state(tmp_path: Path, monkeypatch, gpus: dict) -> None:
    """Write the NVML stand-in's MIG state (the keys nvml_mig.c writes) for ``{gpu: [(gi id,
    name, uuid)]}``, each GPU instance with one full compute instance, beside a profile."""
    flat: dict = {}
    for g, devices in gpus.items():
        flat.update({f"gpu.{g}.current_mode": 1, f"gpu.{g}.pending_mode": 1})
        for gi, name, uuid in devices:
            k = f"gpu.{g}.gi.{gi}"
            flat.update({f"{k}.profile": 15, f"{k}.start": 2 * (gi - 3), f"{k}.size": 2, f"{k}.name": name,
                         f"{k}.ci.0.profile": 0, f"{k}.ci.0.start": 0, f"{k}.ci.0.size": 1, f"{k}.ci.0.name": name,
                         f"{k}.ci.0.uuid": uuid})
    (tmp_path / "mig-state.json").write_text(json.dumps(flat))
    monkeypatch.setenv("BRINGUP_NVML_PROFILE", str(tmp_path / "nvml.json"))


def test_list_with_mig_devices_matches_a_recorded_output(capsys, monkeypatch, tmp_path):
    """tests/fixtures/nvidia-smi/L-mig-mixed.txt: four 1g.20gb MIG devices under GPU 0 of an
    A100-SXM4-80GB host, GPUs 1-3 without MIG; the same state gives the same bytes."""
    recorded = (FIX / "L-mig-mixed.txt").read_text()
    lines = recorded.splitlines()
    gpus = [line.split("(UUID: ")[1].rstrip(")") for line in lines if line.startswith("GPU ")]
    migs = [line.split("(UUID: ")[1].rstrip(")") for line in lines if line.startswith("  MIG ")]
    _mig_state(tmp_path, monkeypatch, {0: [(3 + i, "1g.20gb", u) for i, u in enumerate(migs)]})
    p = {**P, "gpu_count": 4, "gpu_name": "NVIDIA A100-SXM4-80GB", "uuids": gpus}
    assert standin_fabric.nvidia_smi(p, ["-L"]) == 0
    assert capsys.readouterr().out == recorded


def test_mig_device_lines_keep_the_recorded_columns(capsys, monkeypatch, tmp_path):
    """The seven-device recording (L-mig.txt): "Device" and the UUID start in the same
    columns for every name length the lab's GPUs have, and device numbers align at 10+."""
    recorded = (FIX / "L-mig.txt").read_text().splitlines()[1]
    names = ["1g.10gb", "1g.10gb+me", "7g.141gb", "1c.3g.71gb"] + ["1g.18gb"] * 7
    _mig_state(tmp_path, monkeypatch, {1: [(3 + i, n, f"MIG-{i:04d}") for i, n in enumerate(names)]})
    assert standin_fabric.nvidia_smi(P, ["-L"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)" and out[1].startswith("GPU 1: ")
    assert out[2] == "  MIG 1g.10gb     Device  0: (UUID: MIG-0000)"
    for line in out[2:]:
        assert line.index("Device") == recorded.index("Device") and line.index("(UUID") == recorded.index("(UUID")
    assert out[-1] == "  MIG 1g.18gb     Device 10: (UUID: MIG-0010)"
