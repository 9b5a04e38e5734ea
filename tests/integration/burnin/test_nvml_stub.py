"""The NVML stand-in as the real pynvml sees it: values from the profile and real NVML
return codes for what a GPU cannot answer."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from lab.gpu import build_nvml

pytestmark = pytest.mark.integration

PROBE = textwrap.dedent("""
    import json, pynvml as p
    out = {}
    def code(fn, *a):
        try:
            v = fn(*a)
            return v.decode() if isinstance(v, bytes) else v
        except p.NVMLError as e:
            return "ERR%d" % e.value
    try:
        p.nvmlInit()
    except p.NVMLError as e:
        print(json.dumps({"init": e.value})); raise SystemExit
    h = p.nvmlDeviceGetHandleByIndex(0)
    out["count"] = p.nvmlDeviceGetCount()
    out["name"] = code(p.nvmlDeviceGetName, h)
    out["mem_v1"] = p.nvmlDeviceGetMemoryInfo(h).total
    out["mem_v2"] = p.nvmlDeviceGetMemoryInfo(h, p.nvmlMemory_v2).total
    b = p.nvmlDeviceGetPciInfo(h).busId
    out["pci"] = b.decode() if isinstance(b, bytes) else b
    out["ecc"] = code(p.nvmlDeviceGetEccMode, h)
    out["ecc_unc"] = code(p.nvmlDeviceGetTotalEccErrors, h, 1, 0)
    out["remap"] = code(p.nvmlDeviceGetRemappedRows, h)
    out["serial_missing"] = code(p.nvmlDeviceGetSerial, h)
    out["link_ok"] = code(p.nvmlDeviceGetNvLinkState, h, 1)
    out["link_past_end"] = code(p.nvmlDeviceGetNvLinkState, h, 2)
    out["bad_index"] = code(p.nvmlDeviceGetHandleByIndex, 5)
    out["reasons"] = code(p.nvmlDeviceGetCurrentClocksEventReasons, h)
    es = p.nvmlEventSetCreate()
    p.nvmlDeviceRegisterEvents(h, p.nvmlEventTypeXidCriticalError, es)
    ev = p.nvmlEventSetWait(es, 10)
    out["xid"] = [ev.eventType, ev.eventData]
    out["then"] = code(p.nvmlEventSetWait, es, 10)
    out["cuda"] = p.nvmlSystemGetCudaDriverVersion()
    out["retired"] = code(p.nvmlDeviceGetRetiredPages, h, 1)
    out["retired_sbe"] = code(p.nvmlDeviceGetRetiredPages, h, 0)
    p.nvmlShutdown()
    print(json.dumps(out))
""")


def probe(tmp_path, profile: dict | None) -> dict:
    lib = build_nvml(tmp_path / "build")
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(lib)}
    if profile is not None:
        (tmp_path / "nvml.json").write_text(json.dumps(profile))
        env["BRINGUP_NVML_PROFILE"] = str(tmp_path / "nvml.json")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=30, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_profile_values_and_real_error_codes(tmp_path):
    prof = {"driver_version": "570.133.20", "cuda_driver_version": 12080, "gpu_count": 1,
            "gpu.0.name": "NVIDIA H100 80GB HBM3", "gpu.0.memory_total": 85520809984,
            "gpu.0.pci_bus_id": "00000000:18:00.0", "gpu.0.ecc_current": 1, "gpu.0.ecc_pending": 0,
            "gpu.0.ecc.1.0": 4, "gpu.0.remap_pending": 1, "gpu.0.nvlink_links": 2, "gpu.0.nvlink.1.down": 1,
            "gpu.0.xid": 79, "gpu.0.clocks_event_reasons": 64,
            "gpu.0.retired_pages.1": 2}
    out = probe(tmp_path, prof)
    assert out["count"] == 1 and out["name"] == "NVIDIA H100 80GB HBM3"
    assert out["mem_v1"] == out["mem_v2"] == 85520809984
    assert out["pci"] == "00000000:18:00.0"
    assert out["ecc"] == [1, 0] and out["ecc_unc"] == 4
    assert out["remap"] == [0, 0, 1, 0]
    assert out["serial_missing"] == "ERR3"         # NVML_ERROR_NOT_SUPPORTED
    assert out["link_ok"] == 0                     # link 1 is down
    assert out["link_past_end"] == "ERR2"          # NVML_ERROR_INVALID_ARGUMENT
    assert out["bad_index"] == "ERR2"
    assert out["reasons"] == 64
    assert out["xid"] == [8, 79] and out["then"] == "ERR10"  # delivered once, then NVML_ERROR_TIMEOUT
    assert out["cuda"] == 12080
    assert out["retired"] == [0x1000, 0x2000]  # pynvml's size-then-fill protocol works
    assert out["retired_sbe"] == "ERR3"


def test_no_profile_means_driver_not_loaded(tmp_path):
    assert probe(tmp_path, None) == {"init": 9}  # NVML_ERROR_DRIVER_NOT_LOADED


def test_build_is_cached_by_source_hash(tmp_path):
    a = build_nvml(tmp_path)
    stamp = (a / "libnvidia-ml.so.1").stat().st_mtime_ns
    assert build_nvml(tmp_path) == a and (a / "libnvidia-ml.so.1").stat().st_mtime_ns == stamp


def test_concurrent_builds_in_threads_of_one_process_do_not_collide(tmp_path):
    """The BMC simulator installs nodes in threads of one process: one pid, many builders.
    Every builder gets the same, complete library; no temporary file is left over."""
    from concurrent.futures import ThreadPoolExecutor

    from lab.gpu.build import LIB_NAME, ensure_built

    with ThreadPoolExecutor(max_workers=8) as pool:
        dirs = list(pool.map(lambda _: ensure_built(tmp_path), range(16)))
    assert len(set(dirs)) == 1
    lib = dirs[0] / LIB_NAME
    assert lib.stat().st_size > 0 and (dirs[0] / "libnvidia-ml.so").resolve() == lib.resolve()
    assert not [p.name for p in dirs[0].iterdir() if p.name.endswith(".tmp")]
    probe = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", str(lib)],
                           capture_output=True, text=True, check=False)
    assert probe.returncode == 0, probe.stderr
