"""MIG through the NVML stand-in as the real pynvml sees it: MIG mode, GPU and compute
instances made in one process and seen by the next (the state file), NVML's return codes
for what cannot be done, the ``mig_pending`` fault and a GPU model without MIG."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bringup.sku import load_skus
from lab.fleet import Fault, NodeSpec
from lab.gpu import build_nvml
from lab.gpu.profile import nvml_profile

pytestmark = pytest.mark.integration

VERSIONS = {"driver": "570.133.20", "cuda": "12.8"}
PRELUDE = textwrap.dedent("""
    import json, sys, pynvml as p
    def code(fn, *a):
        try:
            v = fn(*a)
            return v.decode() if isinstance(v, bytes) else v
        except p.NVMLError as e:
            return "ERR%d" % e.value
    def profiles(h):
        # profile name -> (enum, id), as a node program resolves them (v2 info carries the name)
        out = {}
        for enum in range(p.NVML_GPU_INSTANCE_PROFILE_COUNT):
            try:
                info = p.nvmlDeviceGetGpuInstanceProfileInfo(h, enum)
            except p.NVMLError as e:
                if e.value in (p.NVML_ERROR_NOT_SUPPORTED, p.NVML_ERROR_INVALID_ARGUMENT):
                    continue
                raise
            out[info.name.decode() if isinstance(info.name, bytes) else info.name] = (enum, info.id, info.sliceCount)
        return out
    def instances(h):
        gis = []
        for name, (enum, pid, slices) in profiles(h).items():
            arr = (p.c_nvmlGpuInstance_t * 8)()
            n = p.c_uint()
            p.nvmlDeviceGetGpuInstances(h, pid, arr, p.byref(n))
            gis += [arr[i] for i in range(n.value)]
        return gis
    def computes(gi):
        out = []
        for cenum in range(p.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
            try:
                cinfo = p.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, cenum, 0)
            except p.NVMLError:
                continue
            arr = (p.c_nvmlComputeInstance_t * 8)()
            n = p.c_uint()
            p.nvmlGpuInstanceGetComputeInstances(gi, cinfo.id, arr, p.byref(n))
            out += [arr[i] for i in range(n.value)]
        return out
    p.nvmlInit()
    h = p.nvmlDeviceGetHandleByIndex(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    out = {}
""")


def node(sku: str = "hgx-h100-80gb", *faults: dict) -> tuple:
    spec = NodeSpec(name="m1", rack="r1", sku=sku, pool="p", bmc_address="127.10.0.1", address="127.20.0.1",
                    faults=[Fault.model_validate(f) for f in faults])
    return spec, load_skus()[sku]


@pytest.fixture
def world(tmp_path):
    lib = build_nvml(tmp_path / "build")

    def make(prof: dict):
        (tmp_path / "nvml.json").write_text(json.dumps(prof))

    def run(body: str, gpu: int = 0) -> dict:
        env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(lib),
               "BRINGUP_NVML_PROFILE": str(tmp_path / "nvml.json")}
        script = PRELUDE + textwrap.dedent(body) + "\nprint(json.dumps(out))\n"
        proc = subprocess.run([sys.executable, "-c", script, str(gpu)], env=env, capture_output=True, text=True,
                              timeout=30, check=False)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    run.make = make
    run.state = tmp_path / "mig-state.json"
    return run


def test_enable_create_read_back_in_a_new_process_destroy_disable(world):
    spec, sku = node()
    world.make(nvml_profile(spec, sku, VERSIONS))
    out = world("""
        out["before"] = p.nvmlDeviceGetMigMode(h)
        out["list_when_off"] = code(p.nvmlDeviceGetGpuInstances, h, 19, (p.c_nvmlGpuInstance_t * 8)(), p.byref(p.c_uint()))
        out["activation"] = p.nvmlDeviceSetMigMode(h, p.NVML_DEVICE_MIG_ENABLE)
        out["after"] = p.nvmlDeviceGetMigMode(h)
        prof = profiles(h)
        out["names"] = sorted(prof)
        enum, gid, slices = prof["MIG 1g.10gb"]
        made = []
        for _ in range(7):
            gi = p.nvmlDeviceCreateGpuInstance(h, gid)
            cinfo = p.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, p.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                                                   p.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
            ci = p.nvmlGpuInstanceCreateComputeInstance(gi, cinfo.id)
            info = p.nvmlGpuInstanceGetInfo(gi)
            made.append([info.id, info.profileId, info.placement.start, info.placement.size,
                         p.nvmlComputeInstanceGetInfo(ci).id])
        out["made"] = made
        out["eighth"] = code(p.nvmlDeviceCreateGpuInstance, h, gid)
        out["remaining"] = p.nvmlDeviceGetGpuInstanceRemainingCapacity(h, gid)
        out["second_ci"] = code(p.nvmlGpuInstanceCreateComputeInstance, gi, cinfo.id)
        out["seven_g_now"] = code(p.nvmlDeviceCreateGpuInstance, h, prof["MIG 7g.80gb"][1])
    """)
    assert out["before"] == [0, 0] and out["list_when_off"] == "ERR3"  # no MIG mode: NOT_SUPPORTED
    assert out["activation"] == 0 and out["after"] == [1, 1]
    assert out["names"] == ["MIG 1g.10gb", "MIG 1g.10gb+me", "MIG 1g.20gb", "MIG 2g.20gb", "MIG 3g.40gb",
                            "MIG 4g.40gb", "MIG 7g.80gb"]
    # GPU instance ids 7..13 for the seven 1-slice placements, each with compute instance 0
    assert out["made"] == [[7 + i, 19, i, 1, 0] for i in range(7)]
    assert out["eighth"] == "ERR23" and out["remaining"] == 0  # NVML_ERROR_INSUFFICIENT_RESOURCES
    assert out["second_ci"] == "ERR23" and out["seven_g_now"] == "ERR23"
    assert world.state.exists()

    later = world("""
        out["mode"] = p.nvmlDeviceGetMigMode(h)
        gis = instances(h)
        out["gis"] = sorted(p.nvmlGpuInstanceGetInfo(g).id for g in gis)
        out["cis"] = sum(len(computes(g)) for g in gis)
        out["max"] = p.nvmlDeviceGetMaxMigDeviceCount(h)
        mig0 = p.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
        out["mig0"] = [p.nvmlDeviceIsMigDeviceHandle(mig0).value, code(p.nvmlDeviceGetUUID, mig0),
                       code(p.nvmlDeviceGetName, mig0), p.nvmlDeviceGetGpuInstanceId(mig0),
                       code(p.nvmlDeviceGetUUID, p.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig0))]
        out["gpu_uuid"] = code(p.nvmlDeviceGetUUID, h)
        out["disable_in_use"] = code(p.nvmlDeviceSetMigMode, h, 0)
        out["gi_in_use"] = code(p.nvmlGpuInstanceDestroy, gis[0])
        for g in gis:
            for c in computes(g):
                p.nvmlComputeInstanceDestroy(c)
            p.nvmlGpuInstanceDestroy(g)
        out["left"] = len(instances(h))
        out["disable"] = p.nvmlDeviceSetMigMode(h, 0)
        out["off"] = p.nvmlDeviceGetMigMode(h)
    """)
    assert later["mode"] == [1, 1] and later["gis"] == list(range(7, 14)) and later["cis"] == 7
    assert later["max"] == 7
    is_mig, uuid, name, gi_id, parent = later["mig0"]
    assert is_mig == 1 and uuid.startswith("MIG-") and len(uuid) == 40 and gi_id == 7
    assert name == "NVIDIA H100 80GB HBM3 MIG 1g.10gb" and parent == later["gpu_uuid"]
    assert later["disable_in_use"] == "ERR19" and later["gi_in_use"] == "ERR19"  # NVML_ERROR_IN_USE
    assert later["left"] == 0 and later["disable"] == 0 and later["off"] == [0, 0]


def test_nvidia_smi_standin_lists_what_the_library_made(world, capsys, monkeypatch):
    """The state file is the contract between nvml_mig.c and the stand-ins' migstate.py."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "lab" / "gpu" / "tools"))
    import standin_fabric

    spec, sku = node()
    nvml = nvml_profile(spec, sku, VERSIONS)
    world.make(nvml)
    made = world("""
        p.nvmlDeviceSetMigMode(h, 1)
        for pid, cenum in ((9, 2), (19, 0)):
            gi = p.nvmlDeviceCreateGpuInstance(h, pid)
            p.nvmlGpuInstanceCreateComputeInstance(gi, p.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, cenum, 0).id)
        out["uuids"] = [code(p.nvmlDeviceGetUUID, p.nvmlDeviceGetMigDeviceHandleByIndex(h, i)) for i in range(2)]
    """, gpu=1)
    monkeypatch.setenv("BRINGUP_NVML_PROFILE", str(world.state.with_name("nvml.json")))
    p = {"gpu_count": 2, "gpu_name": sku.gpu.model, "uuids": [nvml["gpu.0.uuid"], nvml["gpu.1.uuid"]]}
    assert standin_fabric.nvidia_smi(p, ["-L"]) == 0
    a, b = made["uuids"]
    assert capsys.readouterr().out.splitlines() == [
        f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {nvml['gpu.0.uuid']})",
        f"GPU 1: NVIDIA H100 80GB HBM3 (UUID: {nvml['gpu.1.uuid']})",
        f"  MIG 3g.40gb     Device  0: (UUID: {a})",
        f"  MIG 1g.10gb     Device  1: (UUID: {b})"]


def test_the_node_programs_sequence_with_a_mixed_geometry(world):
    """The burn-in's order: resolve profiles, clear what is there, create per geometry with
    a full compute instance each, read back."""
    spec, sku = node("hgx-h200-141gb")
    world.make(nvml_profile(spec, sku, VERSIONS))
    body = """
        if p.nvmlDeviceGetMigMode(h)[0] != 1:
            p.nvmlDeviceSetMigMode(h, 1)
        for g in instances(h):
            for c in computes(g):
                p.nvmlComputeInstanceDestroy(c)
            p.nvmlGpuInstanceDestroy(g)
        prof = profiles(h)
        made = []
        for name in ["MIG 2g.35gb", "MIG 2g.35gb", "MIG 2g.35gb", "MIG 1g.18gb"]:
            enum, gid, slices = prof[name]
            gi = p.nvmlDeviceCreateGpuInstance(h, gid)
            cenum = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}[slices]
            cinfo = p.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, cenum, p.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
            ci = p.nvmlGpuInstanceCreateComputeInstance(gi, cinfo.id)
            info = p.nvmlGpuInstanceGetInfo(gi)
            made.append([name, info.id, info.placement.start, cinfo.sliceCount, cinfo.multiprocessorCount,
                         cinfo.name.decode() if isinstance(cinfo.name, bytes) else cinfo.name])
        out["made"] = made
        out["7g"] = [prof["MIG 7g.141gb"][1], p.nvmlDeviceGetGpuInstanceProfileInfo(h, 4).memorySizeMB]
        out["v1"] = p.nvmlDeviceGetGpuInstanceProfileInfo(h, 0, version=1).id
        bad = p.c_nvmlGpuInstanceProfileInfo_v2_t()
        bad.version = 0x01000098
        out["bad_version"] = p._nvmlGetFunctionPointer("nvmlDeviceGetGpuInstanceProfileInfoV")(h, 0, p.byref(bad))
        out["8_slice"] = code(p.nvmlDeviceGetGpuInstanceProfileInfo, h, p.NVML_GPU_INSTANCE_PROFILE_8_SLICE)
        out["past_end"] = code(p.nvmlDeviceGetGpuInstanceProfileInfo, h, p.NVML_GPU_INSTANCE_PROFILE_COUNT)
    """
    out = world(body)
    # first free placement each: the 2g ones at memory slices 0, 2, 4 (ids 3-5), the 1g at 6
    assert out["made"] == [["MIG 2g.35gb", 3 + i, 2 * i, 2, 32, "MIG 2g.35gb"] for i in range(3)] + [
        ["MIG 1g.18gb", 13, 6, 1, 16, "MIG 1g.18gb"]]
    assert out["7g"] == [0, 143104] and out["v1"] == 19
    assert out["bad_version"] == 25  # NVML_ERROR_ARGUMENT_VERSION_MISMATCH
    assert out["8_slice"] == "ERR3" and out["past_end"] == "ERR2"
    again = world(body)  # a second run clears and makes the same geometry
    assert again["made"] == out["made"]


def test_mig_pending_fault_leaves_the_mode_pending(world):
    spec, sku = node("hgx-h100-80gb", {"kind": "mig_pending", "gpu": 1})
    world.make(nvml_profile(spec, sku, VERSIONS))
    body = """
        out["activation"] = p.nvmlDeviceSetMigMode(h, 1)
        out["mode"] = p.nvmlDeviceGetMigMode(h)
        out["create"] = code(lambda: str(p.nvmlDeviceCreateGpuInstance(h, 19)))
    """
    faulty, healthy = world(body, gpu=1), world(body, gpu=0)
    assert faulty["activation"] == 16 and faulty["mode"] == [0, 1]  # NVML_ERROR_RESET_REQUIRED, still off
    assert faulty["create"] == "ERR3"  # no GPU instances while MIG mode is not on
    assert healthy["activation"] == 0 and healthy["mode"] == [1, 1] and healthy["create"] != "ERR3"


def test_a_gpu_model_without_mig_data_answers_not_supported(world):
    spec, sku = node()
    prof = {k: v for k, v in nvml_profile(spec, sku, VERSIONS).items() if not k.startswith("mig.")}
    world.make(prof)
    out = world("""
        out["calls"] = [code(p.nvmlDeviceGetMigMode, h), code(p.nvmlDeviceSetMigMode, h, 1),
                        code(p.nvmlDeviceGetGpuInstanceProfileInfo, h, 0),
                        code(p.nvmlDeviceCreateGpuInstance, h, 19), code(p.nvmlDeviceGetMaxMigDeviceCount, h)]
        out["is_mig"] = p.nvmlDeviceIsMigDeviceHandle(h).value
    """)
    assert out["calls"] == ["ERR3"] * 5 and out["is_mig"] == 0


def test_partial_compute_instances_and_the_first_free_placement(world):
    spec, sku = node()
    world.make(nvml_profile(spec, sku, VERSIONS))
    out = world("""
        p.nvmlDeviceSetMigMode(h, 1)
        gi = p.nvmlDeviceCreateGpuInstance(h, 9)  # 3g.40gb
        c1 = p.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, p.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 0)
        out["c1"] = [c1.id, c1.instanceCount, c1.multiprocessorCount, str(c1.name)]
        out["too_big"] = code(p.nvmlGpuInstanceGetComputeInstanceProfileInfo, gi, p.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 0)
        cis = [p.nvmlGpuInstanceCreateComputeInstance(gi, c1.id) for _ in range(3)]
        out["placements"] = [p.nvmlComputeInstanceGetInfo(c).placement.start for c in cis]
        out["full"] = code(p.nvmlGpuInstanceCreateComputeInstance, gi, 2)
        out["names"] = [code(p.nvmlDeviceGetName, p.nvmlDeviceGetMigDeviceHandleByIndex(h, i)) for i in range(3)]
        out["order"] = [p.nvmlGpuInstanceGetInfo(p.nvmlDeviceCreateGpuInstance(h, pid)).placement.start
                        for pid in (14, 19)] + [code(p.nvmlDeviceCreateGpuInstance, h, 19)]
    """)
    assert out["c1"] == [0, 3, 20, "MIG 1c.3g.40gb"] and out["too_big"] == "ERR3"
    assert out["placements"] == [0, 1, 2] and out["full"] == "ERR23"
    assert out["names"] == ["NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb"] * 3
    # 3g took slices 0-3, so the 2g goes to 4, one 1g to 6 and no second 1g fits (see nvml_mig.c)
    assert out["order"] == [4, 6, "ERR23"]
