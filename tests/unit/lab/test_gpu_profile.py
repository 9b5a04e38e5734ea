"""The simulated GPUs' profiles (pure functions of lab.gpu.profile): the serials NVML
reports are the BMC simulator's, and the burn-in fault kinds land where the NVML and tool
stand-ins read them."""

from bringup.sku import load_skus
from lab.bmcsim.hardware import gpu_serial
from lab.fleet import Fault, NodeSpec
from lab.gpu.profile import nvml_profile, tool_profile

SKU = load_skus()["hgx-h100-80gb"]
VERSIONS = {"driver": "570.133.20", "cuda": "12.8", "nccl": "2.26.2-1+cuda12.8", "kernel": "6.8.0-60-generic"}


def node(*faults: dict) -> NodeSpec:
    return NodeSpec(name="p1", rack="r1", sku=SKU.sku, pool="p", bmc_address="127.10.0.1", address="127.20.0.1",
                    faults=[Fault.model_validate(f) for f in faults])


def test_nvml_serials_are_the_bmc_serials():
    n = node()
    prof = nvml_profile(n, SKU, VERSIONS)
    assert [prof[f"gpu.{i}.serial"] for i in range(8)] == [gpu_serial(n, i) for i in range(8)]


def test_missing_gpu_keeps_the_remaining_boards_serials():
    n = node({"kind": "missing_gpu", "gpu": 2})
    prof = nvml_profile(n, SKU, VERSIONS)
    assert prof["gpu_count"] == 7 and prof["gpu.2.serial"] == gpu_serial(n, 3)


def test_swapped_gpu_reports_another_serial():
    n = node({"kind": "gpu_serial_swapped", "gpu": 5})
    prof = nvml_profile(n, SKU, VERSIONS)
    assert prof["gpu.5.serial"] != gpu_serial(n, 5) and prof["gpu.5.serial"].startswith("1655")
    assert prof["gpu.4.serial"] == gpu_serial(n, 4)


def test_lifetime_ecc_fault_leaves_this_run_clean():
    prof = nvml_profile(node({"kind": "ecc_aggregate", "gpu": 1, "value": 9}), SKU, VERSIONS)
    assert prof["gpu.1.ecc.1.1"] == 9 and prof["gpu.1.ecc.1.0"] == 0


def test_gpu_burn_no_start_reaches_the_tool_profile():
    n = node({"kind": "gpuburn_no_start", "gpu": 6})
    tools = tool_profile(n, SKU, VERSIONS, nvml_profile(n, SKU, VERSIONS))
    assert tools["gpuburn_no_start"] == [6] and tools["gpuburn_faulty"] == []
