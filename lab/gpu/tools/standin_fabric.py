"""Multi-node parts of the tool stand-ins: ``all_reduce_perf`` under a real ``mpirun`` and
perftest's ``ib_write_bw`` between two nodes. Standard library only (runs on the node).

``all_reduce_perf``: every MPI rank is a stand-in process (``OMPI_COMM_WORLD_RANK``/
``SIZE`` from OpenMPI). As NCCL's ranks exchange their peers' details at init, the ranks
meet in the lab's rendezvous folder (the nodes share this machine): each writes its node,
pid, GPU and profile path there; rank 0 reads every participant's profile and prints the
table, as nccl-tests' rank 0 does. The figures come from all participants: the slowest
node bounds the bus bandwidth, a ``bad_cable`` between two participants slows only runs
that hold both, a port that is down takes its share away.

``ib_write_bw``: the server listens on its node's address (perftest's TCP port, 18515 by
default) and the client connects to it, as perftest's out-of-band exchange does; each end
sends its node and rail, and both print perftest's report (tests/fixtures/perftest) with
the figure of the weaker end: a ``degraded_rail`` on either side, a bad cable between them.

A ``flapping_port`` makes the port's sysfs counters grow while a test uses it.

``nvidia-smi -L`` lists each GPU's MIG devices under it, read from the NVML stand-in's MIG
state (migstate.py), in the real tool's layout (tests/fixtures/nvidia-smi/L-mig*.txt).
"""

import importlib.util
import json
import os
import random
import socket
import sys
import time
from pathlib import Path

RENDEZVOUS_SECONDS = 60.0


def _load(path: str) -> dict:
    with open(path) as fh:
        return json.load(fh)


def flap(p: dict, devices: list) -> None:
    """A flapping port retrains during the test: errors and link-down events accumulate."""
    root = os.environ.get("BURNIN_SYSFS_ROOT", "")
    for dev in devices:
        n = p.get("flapping", {}).get(dev)
        if not n:
            continue
        counters = Path(root + f"/sys/class/infiniband/{dev}/ports/1/counters")
        for name, add in (("symbol_error", n), ("link_error_recovery", 1), ("link_downed", 1)):
            f = counters / name
            try:
                f.write_text(f"{int(f.read_text().split()[0]) + add}\n")
            except (OSError, ValueError, IndexError):
                pass  # no such counter on this node: nothing grows


# --- all_reduce_perf under mpirun ---------------------------------------------------------
def world(p: dict):
    """None outside mpirun (or with one rank); else ``{"root": bool, "ranks": [...],
    "profiles": {node: profile}}`` once every rank has checked in (rank 0 only waits)."""
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    if size < 2:
        return None
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    job = os.environ.get("PMIX_NAMESPACE") or os.environ.get("OMPI_MCA_ess_base_jobid") or "nojob"
    rdv = Path(p["fabric_dir"]) / f"job-{job}"
    rdv.mkdir(parents=True, exist_ok=True)
    dev = local % max(1, p["gpu_count"])
    me = {"rank": rank, "node": p["node"], "pid": os.getpid(), "device": dev, "bus": p["bus_ids"][dev],
          "gpu": p["gpu_name"], "profile": os.environ.get("BRINGUP_NODE_PROFILE", "")}
    tmp = rdv / f".rank-{rank}.tmp"
    tmp.write_text(json.dumps(me))
    tmp.replace(rdv / f"rank-{rank}.json")
    if local == 0:
        flap(p, [ca["name"] for ca in p.get("ib", [])])
    if rank != 0:
        return {"root": False}
    deadline = time.monotonic() + RENDEZVOUS_SECONDS
    while time.monotonic() < deadline:
        files = list(rdv.glob("rank-*.json"))
        if len(files) >= size:
            break
        time.sleep(0.05)
    else:
        sys.stderr.write(f"{p['node']}: NCCL WARN Bootstrap : timeout waiting for {size} ranks\n")
        sys.exit(1)
    ranks = sorted((_load(str(f)) for f in rdv.glob("rank-*.json")), key=lambda r: r["rank"])
    for f in rdv.iterdir():
        f.unlink()
    rdv.rmdir()
    profiles = {}
    for r in ranks:
        profiles.setdefault(r["node"], _load(r["profile"]) if r["profile"] else p)
    return {"root": True, "ranks": ranks, "profiles": profiles}


def internode_busbw(profiles: dict) -> float:
    """The bus bandwidth a run over these nodes reaches at large sizes (GB/s)."""
    names = list(profiles)
    bw = min(float(pr.get("internode_busbw_gbps", 360.0)) for pr in profiles.values())
    for a in names:
        for b in names:
            slow = profiles[a].get("bad_cables", {}).get(b)
            if a != b and slow is not None:
                bw = min(bw, float(slow))
    for pr in profiles.values():
        ib = pr.get("ib", [])
        if ib:
            # NCCL spreads over the rails it finds up: a down port takes its share away
            bw = min(bw, bw * sum(1 for ca in ib if ca["active"]) / len(ib))
    return bw


def rank_lines(ranks: list) -> list:
    return [f"#  Rank {r['rank']:2d} Group  0 Pid {r['pid']:6d} on {r['node']:>10} device {r['device']:2d} "
            f"[{r['bus']}] {r['gpu']}" for r in ranks]


# --- ib_write_bw -------------------------------------------------------------------------
PORT = 18515
SEP = "-" * 87


def _opts(argv: list) -> dict:
    o = {"dev": None, "port": PORT, "size": 65536, "iters": 5000, "gbits": False, "cuda": None, "server": None}
    takes = {"-d": "dev", "--ib-dev": "dev", "-p": "port", "--port": "port", "-s": "size", "--size": "size",
             "-n": "iters", "--iters": "iters", "--bind_source_ip": None, "-q": None, "-D": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in takes:
            if takes[a]:
                o[takes[a]] = argv[i + 1]
            i += 2
            continue
        if a.startswith("--use_cuda"):
            o["cuda"] = a.split("=", 1)[1] if "=" in a else "0"
        elif a == "--report_gbits":
            o["gbits"] = True
        elif not a.startswith("-"):
            o["server"] = a
        i += 1
    o["port"], o["size"], o["iters"] = int(o["port"]), int(o["size"]), int(o["iters"])
    return o


def _rail(p: dict, dev: str):
    return next((ca for ca in p.get("ib", []) if ca["name"] == dev), None)


def rail_gbps(mine: dict, my_dev: str, theirs: dict, their_dev: str) -> float:
    """Gb/s one rail pair reaches: the weaker end, and a bad cable between the two nodes."""
    a, b = _rail(mine, my_dev), _rail(theirs, their_dev)
    bw = min(float(a["rdma_gbps"]), float(b["rdma_gbps"]))
    for x, y in ((mine, theirs), (theirs, mine)):
        slow = x.get("bad_cables", {}).get(y["node"])
        if slow is not None:
            bw = min(bw, float(slow) * 8 / max(1, len(x.get("ib", []))))
    return bw


def _report(p: dict, o: dict, me: dict, peer: dict, gbps: float) -> list:
    rnd = random.Random(f"{p['node']}/{o['dev']}/{peer['node']}")
    unit = "Gb" if o["gbits"] else "MiB"
    scale = 1.0 if o["gbits"] else 1e9 / 8 / 1048576
    avg = gbps * scale
    peak = avg * (1 + rnd.uniform(0.0005, 0.002))
    mpps = gbps * 1e9 / 8 / o["size"] / 1e6

    def addr(who: str, lid: int) -> str:
        return (f" {who} address: LID 0x{lid:02x} QPN 0x{rnd.randrange(0x40, 0xfff):04x} "
                f"PSN 0x{rnd.randrange(1 << 24):06x} RKey 0x1fff00 VAddr 0x{rnd.randrange(1 << 47):014x}")
    out = [SEP, "                    RDMA_Write BW Test",
           f" Dual-port       : OFF\t\tDevice         : {o['dev']}",
           " Number of qps   : 1\t\tTransport type : IB",
           " Connection type : RC\t\tUsing SRQ      : OFF",
           " PCIe relax order: ON\t\tLock-free      : OFF",
           " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF",
           " TX depth        : 128", " CQ Moderation   : 1", " CQE Poll Batch  : Dynamic",
           " Mtu             : 4096[B]", " Link type       : IB", " Max inline data : 0[B]",
           " rdma_cm QPs\t : OFF", " Data ex. method : Ethernet", SEP,
           addr("local", me["lid"]), addr("remote", peer["lid"]), SEP,
           f" #bytes     #iterations    BW peak[{unit}/sec]    BW average[{unit}/sec]   MsgRate[Mpps]",
           f" {o['size']:<10} {o['iters']:<10}       {peak:8.2f}           {avg:8.2f} \t\t     {mpps:.6f}", SEP]
    if o["cuda"] is not None:
        g = int(o["cuda"]) % max(1, p["gpu_count"])
        out = ["initializing CUDA", "Listing all CUDA devices in system:",
               *[f"CUDA device {i}: PCIe address is {b[2:].upper()}:00" for i, b in enumerate(p["bus_ids"])],
               f"Picking device No. {g}", f"[pid = {os.getpid()}, dev = {g}] device name = [{p['gpu_name']}]",
               "creating CUDA Ctx", "making it the current CUDA Ctx",
               f"cuMemAlloc() of a {o['size'] * 2} bytes GPU buffer", *out,
               "deallocating RX GPU buffer", "destroying current CUDA Ctx"]
    return out


def ib_write_bw(p: dict, argv: list) -> int:
    o = _opts(argv)
    ca = _rail(p, o["dev"]) if o["dev"] else (p.get("ib") or [None])[0]
    if ca is None:
        print(f" IB device {o['dev']} not found\n Unable to find the Infiniband/RoCE device")
        return 1
    o["dev"] = ca["name"]
    if not ca["active"]:
        print(" Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for the device")
        return 1
    me = {"node": p["node"], "dev": ca["name"], "lid": ca["lid"], "profile": os.environ.get("BRINGUP_NODE_PROFILE", "")}
    if o["server"] is None:
        print("\n************************************\n* Waiting for client to connect... *\n"
              "************************************", flush=True)
        with socket.create_server((p.get("address", "127.0.0.1"), o["port"]), reuse_port=False) as srv:
            srv.settimeout(RENDEZVOUS_SECONDS)
            conn, _ = srv.accept()
            with conn:
                peer = json.loads(conn.makefile().readline())
                conn.sendall((json.dumps(me) + "\n").encode())
    else:
        try:
            conn = socket.create_connection((o["server"], o["port"]), timeout=5)
        except OSError:
            print(f" Couldn't connect to {o['server']}:{o['port']}\nUnable to open file descriptor for socket "
                  "connection Unable to init the socket connection")
            return 1
        with conn:
            conn.sendall((json.dumps(me) + "\n").encode())
            peer = json.loads(conn.makefile().readline())
    theirs = _load(peer["profile"]) if peer.get("profile") else p
    flap(p, [ca["name"]])
    time.sleep(float(p.get("tool_seconds", 0.2)))
    print("\n".join(_report(p, o, me, peer, rail_gbps(p, ca["name"], theirs, peer["dev"]))))
    return 0


# --- nvidia-smi topo -m ------------------------------------------------------------------
TOPO_LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""
CPUS = {0: "0-55,112-167", 1: "56-111,168-223"}  # two sockets, as in tests/fixtures/topology


def topo_matrix(p: dict) -> str:
    """The matrix as newer drivers print it (tests/fixtures/topology/vllm-16359-*): GPU i
    shares a PCIe switch with NIC i (PXB) when both sit on one NUMA node; a NIC moved to
    the other socket (``nic_numa``) is SYS from its GPU and NODE from the far ones."""
    n = p["gpu_count"]
    ib = p.get("ib", [])
    gpu_numa = [0 if i < max(1, n // 2) else 1 for i in range(n)]

    def gpu_nic(g: int, k: int) -> str:
        if ib[k]["numa_node"] != gpu_numa[g]:
            return "SYS"
        return "PXB" if k == g else "NODE"

    head = [f"GPU{i}" for i in range(n)] + [f"NIC{k}" for k in range(len(ib))]
    out = ["\t" + "\t".join(head) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for g in range(n):
        cells = [" X " if h == g else "NV18" for h in range(n)] + [gpu_nic(g, k) for k in range(len(ib))]
        out.append(f"GPU{g}\t" + "\t".join(cells) + f"\t{CPUS[gpu_numa[g]]}\t{gpu_numa[g]}\t\tN/A")
    for k, ca in enumerate(ib):
        cells = [gpu_nic(g, k) for g in range(n)]
        cells += [" X " if j == k else ("NODE" if other["numa_node"] == ca["numa_node"] else "SYS")
                  for j, other in enumerate(ib)]
        out.append(f"NIC{k}\t" + "\t".join(cells))
    out.append(TOPO_LEGEND)
    out += ["NIC Legend:", ""] + [f"  NIC{k}: {ca['name']}" for k, ca in enumerate(ib)]
    return "\n".join(out) + "\n"


def _migstate():
    """migstate.py from beside this file, found by path: tests load this module by path
    alone, without the tools folder on sys.path."""
    spec = importlib.util.spec_from_file_location("migstate", Path(__file__).resolve().with_name("migstate.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --query-gpu fields the stand-in answers: header text (as nvidia-smi prints it) and value
_QUERY = {
    "index": ("index", lambda p, i: str(i)),
    "name": ("name", lambda p, i: p["gpu_name"]),
    "uuid": ("uuid", lambda p, i: p["uuids"][i]),
    "serial": ("serial", lambda p, i: p["serials"][i]),
    "memory.total": ("memory.total [MiB]", lambda p, i: f"{p['memory_mib']} MiB"),
    "driver_version": ("driver_version", lambda p, i: p["driver"]),
}


def _query(p: dict, fields: str, fmt: str) -> int:
    names = [f.strip() for f in fields.split(",") if f.strip()]
    unknown = [f for f in names if f not in _QUERY]
    if unknown or not fmt.startswith("csv"):
        # nvidia-smi's own words for a field it does not know
        sys.stdout.write(f'Field "{unknown[0] if unknown else fmt}" is not a valid field to query.\n\n')
        return 2
    opts = fmt.split(",")[1:]
    lines = [] if "noheader" in opts else [", ".join(_QUERY[f][0] for f in names)]
    for i in range(int(p["gpu_count"])):
        cells = [_QUERY[f][1](p, i) for f in names]
        if "nounits" in opts:
            cells = [c.removesuffix(" MiB") for c in cells]
        lines.append(", ".join(cells))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def nvidia_smi(p: dict, argv: list) -> int:
    """``topo -m``, ``-L`` and ``--query-gpu=... --format=csv[,noheader][,nounits]``, over the
    GPUs the node's profile shows (a missing GPU is missing here too)."""
    if p.get("container_nvml_broken") and os.environ.get("BRINGUP_LAB_CONTAINER"):
        # the NVIDIA container toolkit's device cgroup lost after a systemd reload: what
        # nvidia-smi prints inside the container (the host's is fine)
        sys.stdout.write("Failed to initialize NVML: Unknown Error\n")
        return 255
    if argv[:2] in (["topo", "-m"], ["topo", "--matrix"]):
        sys.stdout.write(topo_matrix(p))
        return 0
    if argv == ["-L"]:
        migstate = _migstate()
        mig = migstate.load(migstate.state_path())
        for i in range(int(p["gpu_count"])):
            sys.stdout.write(f"GPU {i}: {p['gpu_name']} (UUID: {p['uuids'][i]})\n")
            for n, dev in enumerate(migstate.mig_devices(mig, i)):
                # R470+ layout: the name padded to 11, the device number right-aligned to 2
                sys.stdout.write(f"  MIG {dev['name']:<11} Device {n:>2}: (UUID: {dev['uuid']})\n")
        return 0
    opts = dict(a.split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    if "--query-gpu" in opts:
        return _query(p, opts["--query-gpu"], opts.get("--format", "csv"))
    sys.stderr.write("stand-in nvidia-smi simulates `topo -m`, `-L` and `--query-gpu=... --format=csv`\n")
    return 2
