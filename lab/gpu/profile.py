"""Turn a node's fleet entry (NodeSpec + SkuSpec + installed versions) into the files that
make its simulated GPUs, tools and links: the flat NVML profile, the tool profile, a sysfs
tree and a ``bin/`` of tool stand-ins; and the environment that points at them."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import yaml

from bringup.sku import SkuSpec
from lab.bmcsim.hardware import gpu_serial
from lab.fleet import Fault, FaultKind, NodeSpec
from lab.paths import lab_home

from .build import build_nvml

STANDIN = Path(__file__).parent / "tools" / "standin.py"
#: MIG profiles per GPU model, modelled on NVIDIA's MIG User Guide (see the file's comments)
MIG_DATA = Path(__file__).with_name("mig.yaml")
TOOLS = ("dcgmi", "all_reduce_perf", "gpu_burn", "ibstat", "dpkg-query", "uname", "dmesg", "ib_write_bw", "nvidia-smi")
# bus ids of an HGX 8-GPU baseboard (as nvidia-smi shows them on common H100 servers)
HGX_BUS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db", "1b", "2d", "3d", "60", "9d", "ae", "bd", "de"]
# PCI device ids (device << 16 | vendor), as NVML's pciDeviceId reports them
DEVICE_IDS = {"H100": 0x233010DE, "H200": 0x233510DE}
PEAK_BUSBW = {"hgx-h100-80gb": 480.0, "hgx-h200-141gb": 478.0}
# all_reduce busbw of two such nodes over 8x NDR (GB/s, large messages): below NVLink's,
# bounded by the rails (8 x 400 Gb/s = 400 GB/s a node)
INTERNODE_BUSBW = {"hgx-h100-80gb": 372.0, "hgx-h200-141gb": 368.0}
#: the port counters of sysfs (tests/fixtures/ib-counters), all zero after an install
IB_COUNTERS = ("symbol_error", "port_rcv_errors", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
               "link_error_recovery", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
               "local_link_integrity_errors", "excessive_buffer_overrun_errors", "port_xmit_data", "port_rcv_data",
               "port_xmit_packets", "port_rcv_packets", "link_downed", "port_xmit_discards", "VL15_dropped",
               "port_xmit_wait")
FATAL_XID_TEXT = {79: "GPU has fallen off the bus.", 48: "An uncorrectable double bit error (DBE) has been detected "
                  "on GPU in the framebuffer at partition 0, subpartition 0."}


def _gpu_of(f: Fault) -> int:
    return f.gpu if f.gpu is not None else 0


def _cuda_int(cuda: str) -> int:
    major, _, minor = str(cuda).partition(".")
    return int(major) * 1000 + int(minor or 0) * 10


def _uuid(node: str, i: int) -> str:
    h = hashlib.sha256(f"{node}/gpu{i}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def mig_keys(model: str) -> dict[str, Any]:
    """The flat ``mig.*`` keys nvml_mig.c reads for a GPU model (lab/gpu/mig.yaml): none for
    a model without MIG data, whose MIG calls then answer NOT_SUPPORTED."""
    data = yaml.safe_load(MIG_DATA.read_text())["models"].get(model)
    if not data:
        return {}
    keys: dict[str, Any] = {"mig.memory_slices": data["memory_slices"], "mig.max_devices": data["max_devices"]}
    for enum, prof in data["profiles"].items():
        place = data["placements"][prof["placement"]]
        keys.update({f"mig.profile.{enum}.{k}": v for k, v in prof.items() if k != "placement"})
        keys[f"mig.profile.{enum}.starts"] = ",".join(str(s) for s in place["starts"])
        keys[f"mig.profile.{enum}.size"] = place["size"]
    for enum, comp in data["compute"].items():
        keys.update({f"mig.compute.{enum}.{k}": v for k, v in comp.items()})
    return keys


def nvml_profile(node: NodeSpec, sku: SkuSpec, installed: dict[str, Any]) -> dict[str, Any]:
    g = sku.gpu
    physical = list(range(g.count))
    for f in node.faults_of(FaultKind.MISSING_GPU):
        if _gpu_of(f) in physical:
            physical.remove(_gpu_of(f))  # NVML renumbers what is left
    driver = str(installed.get("driver", ""))
    for f in node.faults_of(FaultKind.DRIVER_DRIFT):
        driver = str(f.value)
    prof: dict[str, Any] = {"driver_version": driver, "nvml_version": f"12.{driver}",
                            "cuda_driver_version": _cuda_int(installed.get("cuda", "12.8")),
                            "gpu_count": len(physical)}
    family = "H200" if "H200" in g.model else "H100"
    for idx, phys in enumerate(physical):
        k = f"gpu.{idx}."
        prof.update({
            k + "name": g.model, k + "uuid": _uuid(node.name, phys),
            # the board serial the BMC reports for this GPU: the judge compares the two
            k + "serial": gpu_serial(node, phys),
            k + "pci_bus_id": f"00000000:{HGX_BUS[phys].upper()}:00.0",
            k + "pci_device_id": DEVICE_IDS[family], k + "pci_subsystem_id": 0x16C110DE,
            k + "vbios": "96.00.99.00.01", k + "arch": 9, k + "memory_total": g.memory_mib * 1024 * 1024,
            k + "ecc_current": 1, k + "ecc_pending": 1, k + "ecc.0.0": 0, k + "ecc.1.0": 0, k + "ecc.0.1": 0,
            k + "ecc.1.1": 0, k + "remap_corr": 0, k + "remap_unc": 0, k + "remap_pending": 0, k + "remap_failure": 0,
            k + "pcie_cur_gen": g.pcie_gen, k + "pcie_max_gen": g.pcie_gen, k + "pcie_cur_width": g.pcie_width,
            k + "pcie_max_width": g.pcie_width, k + "pcie_replay": 0, k + "nvlink_links": g.nvlink_links,
            k + "clocks_event_reasons": 0, k + "supported_clocks_event_reasons": 0x1FF,
            k + "temp": 58 + idx % 4, k + "power_mw": 612000 + idx * 1000,
        })
    prof.update(mig_keys(g.model))
    by_phys = {phys: idx for idx, phys in enumerate(physical)}

    def key(f: Fault, field: str) -> str | None:
        idx = by_phys.get(_gpu_of(f))
        return None if idx is None else f"gpu.{idx}.{field}"

    def put(f: Fault, field: str, value: Any) -> None:
        k = key(f, field)
        if k:
            prof[k] = value

    for f in node.faults:
        kind = f.kind
        if kind == FaultKind.ECC_OFF:
            put(f, "ecc_current", 0)
            put(f, "ecc_pending", 0)
        elif kind == FaultKind.ECC_PENDING:
            put(f, "ecc_pending", 0)  # someone ran nvidia-smi -e 0 without a reset
        elif kind == FaultKind.ECC_UNCORRECTABLE:
            n = int(f.value or 1)
            put(f, "ecc.1.0", n)
            put(f, "ecc.1.1", n)
        elif kind == FaultKind.ECC_AGGREGATE:
            put(f, "ecc.1.1", int(f.value or 1))  # lifetime only: the volatile count stays 0
        elif kind == FaultKind.GPU_SERIAL_SWAPPED:
            # another board in the slot since discovery: same SKU, another serial
            put(f, "serial", "1655" + gpu_serial(node, _gpu_of(f))[4:])
        elif kind == FaultKind.ROW_REMAP_PENDING:
            put(f, "remap_pending", 1)
            put(f, "remap_unc", 1)
        elif kind == FaultKind.ROW_REMAP_FAILURE:
            put(f, "remap_failure", 1)
        elif kind == FaultKind.XID:
            put(f, "xid", int(f.value or 79))
        elif kind == FaultKind.PCIE_DOWNTRAINED:
            v = str(f.value or "8").lower()
            if v.startswith("gen"):
                put(f, "pcie_cur_gen", int(v[3:]))
            else:
                put(f, "pcie_cur_width", int(float(v)))
        elif kind == FaultKind.NVLINK_DOWN:
            put(f, f"nvlink.{f.link or 0}.down", 1)
        elif kind == FaultKind.NVLINK_ERRORS:
            put(f, f"nvlink.{f.link or 0}.err.0", int(f.value or 100))
            put(f, f"nvlink.{f.link or 0}.err.2", int(f.value or 100) // 2)
        elif kind == FaultKind.THERMAL_SLOWDOWN:
            put(f, "clocks_event_reasons", 0x40 | 0x20)
            put(f, "temp", 91)
        elif kind == FaultKind.POWER_BRAKE:
            put(f, "clocks_event_reasons", 0x80 | 0x8)
        elif kind == FaultKind.MIG_PENDING:
            for idx in (range(len(physical)) if f.gpu is None else [by_phys.get(f.gpu)]):
                if idx is not None:
                    prof[f"gpu.{idx}.mig_pending"] = 1
    return prof


def tool_profile(node: NodeSpec, sku: SkuSpec, installed: dict[str, Any], nvml: dict[str, Any]) -> dict[str, Any]:
    n = nvml["gpu_count"]
    packages = {"libnccl2": str(installed.get("nccl", "")),
                "datacenter-gpu-manager-4-core": str(installed.get("dcgm", "4.2.3-1"))}
    for f in node.faults_of(FaultKind.NCCL_DRIFT):
        # as lab.nodes packages it: "2.21.5" is the image's packaging of another release
        value = str(f.value)
        packages["libnccl2"] = value if "-" in value else f"{value}-1+cuda{installed.get('cuda', '12.8')}"
    peak = PEAK_BUSBW.get(sku.sku, 450.0)
    for f in node.faults_of(FaultKind.LOW_BUSBW):
        peak = float(f.value or 300.0)
    prof: dict[str, Any] = {
        "node": node.name, "sku": sku.sku, "gpu_count": n, "gpu_name": sku.gpu.model,
        "memory_mib": sku.gpu.memory_mib, "driver": nvml["driver_version"],
        "uuids": [nvml[f"gpu.{i}.uuid"] for i in range(n)], "serials": [nvml[f"gpu.{i}.serial"] for i in range(n)],
        "bus_ids": ["0x" + nvml[f"gpu.{i}.pci_bus_id"].split(":")[1].lower() for i in range(n)],
        "kernel": str(installed.get("kernel", "6.8.0-60-generic")),
        "dcgm_version": str(installed.get("dcgm", "4.2.3")).split("-")[0],
        "nccl_tests_version": str(installed.get("nccl_tests", "2.14.1")),
        "busbw_peak_gbps": peak, "nccl_wrong": 0, "packages": packages, "temp_c": 62, "tool_seconds": 0.2,
        "hang": [], "garbage": [], "truncated": [], "gpuburn_faulty": [], "gpuburn_no_start": [], "kernel_log": [
            "[    0.000000] Linux version " + str(installed.get("kernel", "")) + " (buildd@lcy02-amd64-001)",
            "[   12.345678] nvidia-nvlink: Nvlink Core is being initialized, major device number 510",
            f"[   13.002101] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {nvml['driver_version']}",
        ],
    }
    for f in node.faults:
        if f.kind == FaultKind.NCCL_WRONG:
            prof["nccl_wrong"] = int(f.value or 1)
        elif f.kind == FaultKind.NCCL_DIES:
            prof["nccl_dies_after"] = int(f.value if f.value is not None else 2)
        elif f.kind == FaultKind.NCCL_CUT:
            prof["nccl_cut_after"] = int(f.value if f.value is not None else 2)
        elif f.kind == FaultKind.DCGM_FAIL:
            prof["dcgm_fail"] = {"test": f.test or "memory", "gpu": _gpu_of(f)}
        elif f.kind == FaultKind.DCGM_SKIP:
            prof["dcgm_skip"] = {"test": f.test}
        elif f.kind == FaultKind.GPUBURN_FAULTY:
            prof["gpuburn_faulty"].append(_gpu_of(f))
        elif f.kind == FaultKind.CONTAINER_NVML_BROKEN:
            prof["container_nvml_broken"] = True
        elif f.kind == FaultKind.GPUBURN_NO_START:
            prof["gpuburn_no_start"].append(_gpu_of(f))
        elif f.kind == FaultKind.TOOL_HANGS:
            prof["hang"].append(str(f.value))
        elif f.kind == FaultKind.GARBAGE_OUTPUT:
            prof["garbage"].append(str(f.value))
        elif f.kind == FaultKind.TRUNCATED_OUTPUT:
            prof["truncated"].append(str(f.value))
        elif f.kind == FaultKind.XID:
            code = int(f.value or 79)
            bus = HGX_BUS[_gpu_of(f)]
            prof["kernel_log"].append(f"[ 4242.424242] NVRM: Xid (PCI:0000:{bus}:00): {code}, pid=31337, "
                                      f"name=all_reduce_perf, {FATAL_XID_TEXT.get(code, 'Xid event.')}")
    ib = []
    names = nic_names(sku)
    for i in range(sku.nics.compute):
        ib.append({"name": names[i], "guid": f"0x{hashlib.sha256(f'{node.name}/ib{i}'.encode()).hexdigest()[:16]}",
                   "active": True, "rate": sku.nics.compute_speed_gbps, "lid": i + 1})
    for f in node.faults:
        if f.kind in (FaultKind.IB_PORT_DOWN, FaultKind.IB_WRONG_SPEED):
            idx = _ib_index(f, [ca["name"] for ca in ib])
            if idx is not None and idx < len(ib):
                if f.kind == FaultKind.IB_PORT_DOWN:
                    ib[idx]["active"] = False
                else:
                    ib[idx]["rate"] = int(float(f.value or 200)) if f.value is not None else 200
    prof["ib"] = ib
    _fabric(node, sku, prof)
    return prof


def _fabric(node: NodeSpec, sku: SkuSpec, prof: dict[str, Any]) -> None:
    """What the multi-node stand-ins need: the node's address (the perftest server listens
    there), inter-node figures and the fabric faults, read by its partners' stand-ins too."""
    ib = prof["ib"]
    half = max(1, len(ib) // 2)
    for i, ca in enumerate(ib):
        # NICs sit next to their GPUs: the first half on NUMA node 0, the rest on 1
        ca["numa_node"] = 0 if i < half else 1
        ca["rdma_gbps"] = round(ca["rate"] * 0.981, 2) if ca["active"] else 0.0
    prof["address"] = node.address
    prof["internode_busbw_gbps"] = INTERNODE_BUSBW.get(sku.sku, 360.0)
    prof["bad_cables"] = {}
    prof["flapping"] = {}
    for f in node.faults:
        idx = _ib_index(f, [ca["name"] for ca in ib])
        if f.kind == FaultKind.SLOW_NODE:
            prof["internode_busbw_gbps"] = float(f.value or 180.0)
        elif f.kind == FaultKind.BAD_CABLE and f.other:
            prof["bad_cables"][f.other] = float(f.value or 40.0)
        elif f.kind == FaultKind.DEGRADED_RAIL and idx is not None and idx < len(ib):
            ib[idx]["rdma_gbps"] = float(f.value or 190.0)
        elif f.kind == FaultKind.NIC_NUMA and idx is not None and idx < len(ib):
            ib[idx]["numa_node"] = 1 - ib[idx]["numa_node"]
        elif f.kind == FaultKind.FLAPPING_PORT and idx is not None and idx < len(ib):
            prof["flapping"][ib[idx]["name"]] = int(f.value or 25)


def nic_names(sku: SkuSpec) -> list[str]:
    """The compute NICs' names, GPU i's rail first: the SKU's GPU<->NIC map is the truth
    (a DGX H100 names GPU1's NIC mlx5_3, not mlx5_1), so a healthy lab node matches it;
    a SKU without a map gets mlx5_0, mlx5_1..."""
    by_gpu = {p.gpu: p.nic for p in sku.gpu_nic_map.pairs} if sku.gpu_nic_map else {}
    return [by_gpu.get(i, f"mlx5_{i}") for i in range(sku.nics.compute)]


def _ib_index(f: Fault, names: list[str]) -> int | None:
    """The NIC a fault names: ``cxN`` is GPU N's rail; an HCA name is looked up (the lab's
    names follow the SKU's map, so mlx5_3 is GPU1's NIC on an HGX H100)."""
    if f.iface and f.iface.startswith("cx") and f.iface[2:].isdigit():
        return int(f.iface[2:])
    if f.iface and f.iface.startswith("mlx5_"):
        return names.index(f.iface) if f.iface in names else None
    if f.kind == FaultKind.IB_PORT_DOWN and isinstance(f.value, (int, float)):
        return int(f.value)
    return 0


IB_RATE_NAMES = {400: "4X NDR", 200: "4X HDR", 100: "4X EDR", 50: "4X HDR", 25: "4X EDR", 10: "4X SDR"}


def write_sysfs(root: Path, tools: dict[str, Any]) -> None:
    for ca in tools["ib"]:
        port = root / "sys/class/infiniband" / ca["name"] / "ports" / "1"
        port.mkdir(parents=True, exist_ok=True)
        rate = ca["rate"] if ca["active"] else 10
        (port / "state").write_text("4: ACTIVE\n" if ca["active"] else "1: DOWN\n")
        (port / "phys_state").write_text("5: LinkUp\n" if ca["active"] else "3: Disabled\n")
        (port / "rate").write_text(f"{rate} Gb/sec ({IB_RATE_NAMES.get(rate, '4X')})\n")
        (port / "link_layer").write_text("InfiniBand\n")
        (port / "counters").mkdir(exist_ok=True)
        for name in IB_COUNTERS:
            (port / "counters" / name).write_text("0\n")
        (port.parent.parent / "device").mkdir(exist_ok=True)
        (port.parent.parent / "device" / "numa_node").write_text(f"{ca.get('numa_node', 0)}\n")
    for name, state, speed in [("mgmt0", "up", 25000)] + [
            (f"ibp{i}s0", "up" if ca["active"] else "down", ca["rate"] * 1000) for i, ca in enumerate(tools["ib"])]:
        d = root / "sys/class/net" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "operstate").write_text(state + "\n")
        (d / "speed").write_text(f"{speed}\n")


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


def _layout(dest_dir: Path) -> dict[str, Path]:
    """Where things go under the node's root: tools where a real image puts them, the
    simulated hardware's profiles in a lab-only folder, sysfs at ``sys/`` itself."""
    return {"bin": dest_dir / "usr/local/bin", "lab": dest_dir / "var/lib/bringup-lab", "sysfs": dest_dir}


#: an Ubuntu node's own PATH (/etc/environment, less snap): what its sessions find first
NODE_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def node_env(dest_dir: Path, nvml_dir: Path) -> dict[str, str]:
    """A node session's environment: the stand-ins first, then the node's own system
    folders, then this machine's PATH, only as a fallback for a tool kept elsewhere. The
    order is what a node has: the stand-ins' ``python3`` is the system's (the one Ansible
    is told to use), not whatever the controller's PATH names first. On a machine with
    pyenv that is a shim, a shell script that forks about 40 processes for every tool a
    node runs (the agent's tools, each MPI rank of the fabric test): 0.236 s of CPU a tool
    run that way, 0.069 s with the system's (bench/node_tools.py)."""
    where = _layout(Path(dest_dir))
    return {
        "PATH_PREFIX": str(where["bin"]),
        "PATH": os.pathsep.join([str(where["bin"]), NODE_SYSTEM_PATH, os.environ.get("PATH", "/usr/bin:/bin")]),
        "LD_LIBRARY_PATH": str(nvml_dir),
        "BRINGUP_NVML_PROFILE": str(where["lab"] / "nvml.json"),
        "BRINGUP_NODE_PROFILE": str(where["lab"] / "node.json"),
        "BURNIN_SYSFS_ROOT": str(where["sysfs"]),
    }


def write_node_profile(node: NodeSpec, sku: SkuSpec, installed: dict[str, Any], dest_dir: Path,
                       nvml_build_dir: Path | None = None) -> dict[str, str]:
    """Write the node's simulated GPU world under ``dest_dir`` (the node's root folder) and
    return its environment.

    ``installed`` holds the versions the OS install put on the node (``driver``, ``cuda``,
    ``nccl``, ``kernel``, optionally ``dcgm``, ``nccl_tests``); faults in ``node.faults``
    are applied on top. Files: ``usr/local/bin/`` (tool stand-ins), ``sys/class/{net,
    infiniband}/`` (sysfs), ``var/lib/bringup-lab/{nvml,node}.json`` (profiles). The returned
    mapping has ``PATH`` (the stand-ins first), ``PATH_PREFIX`` (just the stand-in folder,
    for shells that build their own PATH), ``LD_LIBRARY_PATH``, ``BRINGUP_NVML_PROFILE``,
    ``BRINGUP_NODE_PROFILE`` and ``BURNIN_SYSFS_ROOT``. Idempotent. The NVML library is built
    once into ``nvml_build_dir`` (default ``<lab home>/build``) and shared by all nodes.
    """
    dest_dir = Path(dest_dir)
    where = _layout(dest_dir)
    where["lab"].mkdir(parents=True, exist_ok=True)
    nvml = nvml_profile(node, sku, installed)
    tools = tool_profile(node, sku, installed, nvml)
    # the lab's nodes share this machine: a multi-node stand-in's ranks meet in a folder
    # beside the nodes' own (<home>/nodes/.fabric), as NCCL's ranks would over the network
    tools["fabric_dir"] = str(dest_dir.parent.parent / ".fabric")
    _write_json(where["lab"] / "nvml.json", nvml)
    _write_json(where["lab"] / "node.json", tools)
    write_sysfs(where["sysfs"], tools)
    bindir = where["bin"]
    bindir.mkdir(parents=True, exist_ok=True)
    missing = {str(f.value) for f in node.faults_of(FaultKind.MISSING_TOOL)}
    for tool in TOOLS:
        link = bindir / tool
        if link.is_symlink() or link.exists():
            link.unlink()
        if tool not in missing:
            link.symlink_to(STANDIN)
    nvml_dir = build_nvml(nvml_build_dir or lab_home() / "build")
    env = node_env(dest_dir, nvml_dir)
    for f in node.faults_of(FaultKind.DEVICE_PLUGIN_SHORT):
        # the device plugin sees fewer healthy GPUs than the node has: what the lab's
        # kubelet (kubeadm stand-in) registers as nvidia.com/gpu capacity and allocatable
        env["BRINGUP_GPU_COUNT"] = str(int(f.value if f.value is not None else nvml["gpu_count"] - 1))
    return env
