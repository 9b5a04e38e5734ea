#!/usr/bin/env python3
"""Stand-ins for the node tools the burn-in agent runs: dcgmi, all_reduce_perf, gpu_burn,
ibstat, dpkg-query, uname, dmesg; and the fabric test's ib_write_bw, multi-node
all_reduce_perf and ``nvidia-smi topo -m`` (in standin_fabric.py).

One script, dispatched on the name it is called by (lab.gpu links each tool name to it).
Each prints the real tool's output format with numbers taken from the node profile in
$BRINGUP_NODE_PROFILE (written by lab.gpu.profile from the fleet profile). The formats
follow recorded public outputs (see tests/fixtures/*/README.md); the numbers are made up
from the SKU and the injected faults. Standard library only.
"""

import atexit
import io
import json
import os
import random
import sys
import time

import standin_fabric  # beside this file (Python puts the real, resolved script folder first)

REAL_BIN_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")


def profile() -> dict:
    path = os.environ.get("BRINGUP_NODE_PROFILE")
    if not path:
        sys.stderr.write("stand-in: BRINGUP_NODE_PROFILE is not set\n")
        sys.exit(127)
    with open(path) as fh:
        return json.load(fh)


def real(name: str, argv: list) -> None:
    """Hand over to the real tool of that name (the stand-in only covers what we simulate)."""
    for d in REAL_BIN_DIRS:
        exe = os.path.join(d, name)
        if os.path.exists(exe):
            os.execv(exe, [exe] + argv)
    sys.stderr.write(f"{name}: not found\n")
    sys.exit(127)


def misbehave(p: dict, tool: str) -> None:
    if tool in p.get("hang", []):
        sys.stdout.write("starting...\n")
        sys.stdout.flush()
        time.sleep(3600)
    if tool in p.get("garbage", []):
        rnd = random.Random(tool)
        junk = "".join(rnd.choice("#@!%&*()<>?/\\|~ abcdefXYZ0123456789") for _ in range(400))
        sys.stdout.write("\x1b[1m" + junk[:80] + "\n" + junk[80:] + "\nSegmentation fault (core dumped)?\n")
        sys.exit(0)
    if tool in p.get("truncated", []):
        # the tool's output stops part-way and it still exits 0, as a log cut by a full
        # disk or a pipe that closed early: only the first 40 % of its lines come out
        real_stdout, buf = sys.stdout, io.StringIO()
        sys.stdout = buf

        def cut() -> None:
            lines = buf.getvalue().splitlines(keepends=True)
            real_stdout.write("".join(lines[: max(1, len(lines) * 2 // 5)]))
            real_stdout.flush()
        atexit.register(cut)


# --- dcgmi ------------------------------------------------------------------------------
DCGM_LEVELS = {
    1: [("Deployment", "software")],
    2: [("Deployment", "software"), ("Integration", "pcie"), ("Hardware", "memory")],
    3: [("Deployment", "software"), ("Integration", "pcie"), ("Hardware", "memory"), ("Hardware", "diagnostic"),
        ("Stress", "targeted_stress"), ("Stress", "targeted_power"), ("Stress", "memory_bandwidth")],
}
DCGM_CATEGORY = {t: c for lvl in DCGM_LEVELS.values() for c, t in lvl}


def dcgmi(p: dict, argv: list) -> int:
    if not argv or argv[0] != "diag":
        sys.stderr.write("stand-in dcgmi only simulates `dcgmi diag`\n")
        return 2
    level = 1
    if "-r" in argv:
        raw = argv[argv.index("-r") + 1]
        level = int(raw) if raw.isdigit() else 1
    want_json = "-j" in argv or "--json" in argv
    tests = list(DCGM_LEVELS.get(min(max(level, 1), 3)))
    fail = p.get("dcgm_fail")  # {"test": name, "gpu": index}
    if fail and not any(t == fail["test"] for _, t in tests):
        # the lab makes an injected failure visible at any run level
        tests.append((DCGM_CATEGORY.get(fail["test"], "Hardware"), fail["test"]))
    skip = p.get("dcgm_skip")  # {"test": name or None}
    gpus = list(range(p["gpu_count"]))
    categories: dict = {}
    failed_any = False
    for cat, name in tests:
        results = []
        summary = "Pass"
        for g in gpus:
            res = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": g, "status": "Pass"}
            if fail and fail["test"] == name and g == fail.get("gpu", 0):
                res["status"] = "Fail"
                res["warnings"] = [{"error_category": 3, "error_id": 90, "error_severity": 2,
                                    "warning": f"Error using CUDA API cudaMemcpy for GPU {g}: "
                                               "uncorrectable memory error detected"}]
                summary = "Fail"
                failed_any = True
            elif skip is not None and skip.get("test") in (None, name):
                res["status"] = "Skip"
                summary = "Skip" if summary == "Pass" else summary
            results.append(res)
        categories.setdefault(cat, []).append({"name": name, "results": results, "test_summary": {"status": summary}})
    doc = {
        "DCGM Diagnostic": {"test_categories": [{"category": c, "tests": t} for c, t in categories.items()]},
        "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": [
            {"entity_id": g, "device_id": p.get("pci_device_hex", "2330"), "serial_num": p["serials"][g]}
            for g in gpus]}],
        "metadata": {"Driver Version Detected": p["driver"], "version": p.get("dcgm_version", "4.2.3")},
    }
    if want_json:
        print(json.dumps(doc, indent="\t"))
    else:
        print("Successfully ran diagnostic for group.")
        for c, ts in categories.items():
            print(f"|-----  {c}  --------")
            for t in ts:
                print(f"| {t['name']:<25} | {t['test_summary']['status']}")
    return 226 if failed_any else 0


# --- all_reduce_perf ---------------------------------------------------------------------
def _size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    return int(float(t[:-1]) * mult[t[-1]]) if t and t[-1] in mult else int(t)


def all_reduce_perf(p: dict, argv: list) -> int:
    opts = {"-b": "8", "-e": "128M", "-f": "2", "-g": "1"}
    for i, a in enumerate(argv[:-1]):
        if a in opts:
            opts[a] = argv[i + 1]
    lo, hi, factor, ngpus = _size(opts["-b"]), _size(opts["-e"]), int(opts["-f"]), int(opts["-g"])
    ngpus = min(ngpus, p["gpu_count"])
    peak = float(p.get("busbw_peak_gbps", 450.0))
    wrong_at_top = int(p.get("nccl_wrong", 0))
    w = standin_fabric.world(p)  # under mpirun: one rank of many, maybe on several nodes
    if w is not None and not w["root"]:
        time.sleep(float(p.get("tool_seconds", 0.2)))
        return 0  # nccl-tests prints from rank 0 only
    nranks = ngpus
    if w is not None:
        nranks = len(w["ranks"]) * ngpus
        if len(w["profiles"]) > 1:
            peak = standin_fabric.internode_busbw(w["profiles"])
        else:
            peak = min(float(pr.get("busbw_peak_gbps", 450.0)) for pr in w["profiles"].values())
        wrong_at_top = max(int(pr.get("nccl_wrong", 0)) for pr in w["profiles"].values())
    out = [f"# nccl-tests version {p.get('nccl_tests_version', '2.14.1')} nccl-headers=22602 nccl-library=22602",
           "# Collective test starting: all_reduce_perf",
           (f"# nThread 1 nGpus {ngpus} minBytes {lo} maxBytes {hi} step: {factor}(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0"), "#", "# Using devices"]
    if w is not None:
        out += standin_fabric.rank_lines(w["ranks"])
    for g in range(ngpus if w is None else 0):
        out.append(f"#  Rank {g:2d} Group  0 Pid {4242:6d} on {p['node']:>10} device {g:2d} "
                   f"[{p['bus_ids'][g]}] {p['gpu_name']}")
    out += ["#",
            "#                                                              out-of-place                       in-place          ",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "]
    sizes = []
    s = lo
    while s <= hi:
        sizes.append(s)
        s = s * factor if factor > 1 else s + 1
    total_bw = 0.0
    oob = 0
    # under mpirun any participant's fault ends the collective for all of them
    profiles = w["profiles"] if w is not None else {p["node"]: p}
    dies, culprit = _first_fault(profiles, "nccl_dies_after")
    cut, _ = _first_fault(profiles, "nccl_cut_after")
    for n, s in enumerate(sizes):
        if dies is not None and n >= dies:
            return _nccl_dies(p, out, w, culprit)
        if cut is not None and n >= cut:
            # the output stops mid-sweep and the tool still exits 0 (a log cut by a full disk,
            # a pipe closed early): no summary lines
            return _nccl_print(p, out, w, 0)
        busbw = peak * s / (s + (64 << 20))
        cols = []
        for place in (0, 1):
            bw = busbw * (0.995 if place else 1.0)
            algbw = bw * nranks / (2 * (nranks - 1)) if nranks > 1 else bw
            time_us = s / (algbw * 1e3) if algbw else 0.0
            wrong = wrong_at_top if (s == sizes[-1] and place == 0) else 0
            oob += wrong
            cols.append(f"{time_us:8.1f} {algbw:7.2f} {bw:7.2f} {wrong:6d}")
            total_bw += bw / 2
        out.append(f"{s:12d} {s // 4:13d}     float     sum      -1 " + " ".join(cols))
        if p.get("nccl_info_interleaved") and s == sizes[0]:
            out.append(f"{p['node']}:4242:4250 [0] NCCL INFO comm 0x5555 rank 0 nranks {nranks} - Init COMPLETE")
    out.append(f"# Out of bounds values : {oob} {'OK' if oob == 0 else 'FAILED'}")
    out.append(f"# Avg bus bandwidth    : {total_bw / max(1, len(sizes)):.4g} ")
    out += ["#", "# Collective test concluded: all_reduce_perf", ""]
    return _nccl_print(p, out, w, 0)


def _nccl_print(p: dict, out: list, w, rc: int) -> int:
    time.sleep(float(p.get("tool_seconds", 0.2)))
    if w is None:
        print("\n".join(out))
    else:
        # under mpirun a rank's stdout is forwarded in the chunks it was written in, each
        # tagged ([1,0]<stdout>:): one big write cut mid-line breaks a table row in two
        for line in out:
            print(line, flush=True)
    return rc


def _first_fault(profiles: dict, key: str) -> tuple:
    """(rows before the fault, node) of the participant whose fault comes first; (None, None)."""
    hits = sorted((int(pr[key]), name) for name, pr in profiles.items() if pr.get(key) is not None)
    return hits[0] if hits else (None, None)


def _nccl_dies(p: dict, out: list, w, host: str) -> int:
    """A collective that fails mid-sweep, as nccl-tests reports it (nccl-tests #322): the
    failing call's line, then its caller's, from the failing node's rank (``host``), and exit
    3 (testNcclError); under a real mpirun the launcher then reports the non-zero exit itself."""
    pid = next((r["pid"] for r in (w or {}).get("ranks", []) if r["node"] == host), os.getpid())
    failure = f"{host}: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '"
    out += [failure, f" .. {host} pid {pid}: Test failure common.cu:915"]
    return _nccl_print(p, out, w, 3)


# --- gpu_burn ----------------------------------------------------------------------------
def gpu_burn(p: dict, argv: list) -> int:
    """As wilicc/gpu-burn prints it (tests/fixtures/gpu-burn): a GPU whose test cannot start
    prints "Couldn't init a GPU test", shows 0 work to the end, and is still listed OK."""
    n = p["gpu_count"]
    faulty = set(p.get("gpuburn_faulty", []))
    no_start = set(p.get("gpuburn_no_start", []))
    for g in range(n):
        print(f"GPU {g}: {p['gpu_name']} (UUID: {p['uuids'][g]})")
    for g in range(n):
        if g in no_start:
            print("Couldn't init a GPU test: Error: CUDA_ERROR_UNKNOWN")
            continue
        print(f"Initialized device {g} with {p['memory_mib']} MB of memory ({p['memory_mib'] - 570} MB available, "
              f"using {int((p['memory_mib'] - 570) * 0.9)} MB of it), using FLOATS")
        print("Results are 268435456 bytes each, thus performing 270 iterations")
    time.sleep(float(p.get("tool_seconds", 0.2)))
    temps = " - ".join(f"{p.get('temp_c', 62) + g % 3} C" for g in range(n))
    for pct, done in (("50.0", 2700), ("100.0", 5400)):
        procd = " - ".join("0 (0 Gflop/s)" if g in no_start else f"{done} (51234 Gflop/s)" for g in range(n))
        errs = " - ".join("1843  (WARNING!)" if g in faulty else "0" for g in range(n))
        print(f"{pct}%  proc'd: {procd}   errors: {errs}   temps: {temps} ")
        print("\tSummary at:   " + time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime()))
        print()
    print("Killing processes with SIGTERM (soft kill)")
    print("done\n")
    print(f"Tested {n} GPUs:")
    for g in range(n):
        print(f"\tGPU {g}: {'FAULTY' if g in faulty else 'OK'}")
    return 0  # like the real gpu_burn: 0 even when a GPU is FAULTY


# --- ibstat ------------------------------------------------------------------------------
def ibstat(p: dict, argv: list) -> int:
    for ca in p.get("ib", []):
        print(f"CA '{ca['name']}'")
        print("\tCA type: MT4129")
        print("\tNumber of ports: 1")
        print("\tFirmware version: 28.39.2048")
        print("\tHardware version: 0")
        print(f"\tNode GUID: {ca['guid']}")
        print(f"\tSystem image GUID: {ca['guid']}")
        print("\tPort 1:")
        print(f"\t\tState: {'Active' if ca['active'] else 'Down'}")
        print(f"\t\tPhysical state: {'LinkUp' if ca['active'] else 'Disabled'}")
        print(f"\t\tRate: {ca['rate'] if ca['active'] else 10}")
        print(f"\t\tBase lid: {ca['lid']}")
        print("\t\tLMC: 0")
        print("\t\tSM lid: 1")
        print("\t\tCapability mask: 0xa751e848")
        print(f"\t\tPort GUID: {ca['guid']}")
        print("\t\tLink layer: InfiniBand")
    return 0


# --- dpkg-query, uname, dmesg -------------------------------------------------------------
def dpkg_query(p: dict, argv: list) -> int:
    pkgs = p.get("packages", {})
    fmt = "${binary:Package}\t${Version}\n"
    names = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith(("-f=", "--showformat=")):
            fmt = a.split("=", 1)[1]
        elif a in ("-f", "--showformat"):
            i += 1
            fmt = argv[i]
        elif a in ("-W", "--show"):
            pass
        else:
            names.append(a)
        i += 1
    sysroot = os.environ.get("BRINGUP_SYSROOT")
    admindir = os.path.join(sysroot, "var/lib/dpkg") if sysroot else ""
    if admindir and os.path.exists(os.path.join(admindir, "status")):
        # the simulated node has a dpkg database (written by its OS install and changed by
        # the pinning play): the real dpkg-query answers from it
        real("dpkg-query", [f"--admindir={admindir}"] + argv)
    if not names or not all(n in pkgs for n in names):
        real("dpkg-query", argv)
    fmt = fmt.replace("\\t", "\t").replace("\\n", "\n")
    for n in names:
        sys.stdout.write(fmt.replace("${binary:Package}", n).replace("${Package}", n)
                         .replace("${Version}", pkgs[n]))
    return 0


def uname(p: dict, argv: list) -> int:
    if argv == ["-r"]:
        print(p["kernel"])
        return 0
    real("uname", argv)
    return 0


def dmesg(p: dict, argv: list) -> int:
    for line in p.get("kernel_log", []):
        print(line)
    return 0


TOOLS = {"dcgmi": dcgmi, "all_reduce_perf": all_reduce_perf, "gpu_burn": gpu_burn, "ibstat": ibstat,
         "dpkg-query": dpkg_query, "uname": uname, "dmesg": dmesg,
         "ib_write_bw": lambda p, argv: standin_fabric.ib_write_bw(p, argv),
         "nvidia-smi": lambda p, argv: standin_fabric.nvidia_smi(p, argv)}


def main() -> int:
    tool = os.path.basename(sys.argv[0])
    if tool not in TOOLS:
        sys.stderr.write(f"stand-in: unknown tool name {tool!r}\n")
        return 127
    p = profile()
    misbehave(p, tool)
    return TOOLS[tool](p, sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
