"""Host checks: CPU/memory under stress-ng, disk with fio, NIC and InfiniBand link state.

The sysfs root is configurable (plan ``sysfs_root``, else ``$BURNIN_SYSFS_ROOT``, else ``/``)
so the same code reads a simulated node's folder in the lab.
"""

import glob
import os
import re
import tempfile
from typing import Any

from ..parsers import UnparseableOutput
from ..parsers.ibstat import parse_ibstat
from ..parsers.system import parse_fio_json, parse_stress_ng
from .base import Check, CheckResult, Context


class CpuMemCheck(Check):
    name = "cpu_mem"

    def run(self, ctx: Context, r: CheckResult) -> None:
        spec = ctx.tool("stress_ng")
        d = int(spec.get("duration_s", 60))
        args = ["--cpu", "0", "--vm", "1", "--vm-bytes", str(spec.get("vm_bytes", "5%")), "--verify",
                "--metrics-brief", "--timeout", f"{d}s"]
        run = ctx.run("stress_ng", "stress-ng", args, d + 60)
        if r.tool_problem(run):
            return
        out = parse_stress_ng(run.stdout + "\n" + run.stderr)
        r.data.update(out)
        r.metrics.update({"stressors_failed": out["failed"], "rc": run.rc})
        if run.rc != 0 or out["unsuccessful"] or out["failed"]:
            r.find("stress_failed", f"stress-ng reported failures (exit {run.rc}, {out['failed']} failed)",
                   value=run.rc)


class DiskCheck(Check):
    name = "disk"

    def run(self, ctx: Context, r: CheckResult) -> None:
        spec = ctx.tool("fio")
        d = int(spec.get("duration_s", 30))
        directory = spec.get("directory") or tempfile.gettempdir()
        target = os.path.join(directory, f"burnin-fio-{os.getpid()}.dat")
        args = ["--name=burnin", f"--filename={target}", f"--size={spec.get('size', '256M')}", "--rw=randrw",
                "--bs=4k", "--ioengine=psync", "--time_based", f"--runtime={d}", "--output-format=json"]
        try:
            run = ctx.run("fio", "fio", args, d + 60)
        finally:
            try:
                os.unlink(target)
            except OSError:
                pass
        if r.tool_problem(run):
            return
        try:
            out = parse_fio_json(run.stdout)
        except UnparseableOutput as exc:
            r.error("unparseable_output", f"fio: {exc}", tool="fio")
            return
        r.metrics.update({k: round(v, 1) for k, v in out.items() if isinstance(v, float)})
        r.metrics["job_errors"] = out["job_errors"]
        r.data["fio_version"] = out["fio_version"]
        if run.rc != 0 or out["job_errors"]:
            r.find("fio_failed", f"fio exited {run.rc} with {out['job_errors']} job errors")
        floor = ctx.limits.get("min_disk_write_mib_s")
        if floor is not None and out["write_mib_s"] < float(floor):
            r.find("disk_slow", f"disk writes {out['write_mib_s']:.1f} MiB/s, below {floor}",
                   value=out["write_mib_s"])


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return ""


#: the port error counters the controller compares between two looks (sysfs names under
#: ports/N/counters/, the kernel's sysfs-class-infiniband ABI); traffic counters are left out
IB_ERROR_COUNTERS = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
                     "port_rcv_remote_physical_errors", "local_link_integrity_errors",
                     "excessive_buffer_overrun_errors")


def _counters(pdir: str) -> dict[str, int]:
    """The port's error counters that read as integers (a missing or odd file is left out:
    the controller treats a counter it cannot compare as unknown, never as zero)."""
    out = {}
    for name in IB_ERROR_COUNTERS:
        text = _read(os.path.join(pdir, "counters", name))
        if text.isdigit():
            out[name] = int(text)
    return out


def _rate_gbps(text: str) -> float:
    m = re.match(r"\s*([0-9.]+)", text or "")
    return float(m.group(1)) if m else 0.0


class NetworkCheck(Check):
    name = "network"

    def run(self, ctx: Context, r: CheckResult) -> None:
        root = ctx.plan.get("sysfs_root") or os.environ.get("BURNIN_SYSFS_ROOT") or "/"
        exp = ctx.expect
        want_ports = exp.get("ib_ports")
        want_rate = exp.get("ib_rate_gbps")
        ports: dict[str, dict[str, Any]] = {}
        for pdir in sorted(glob.glob(os.path.join(root, "sys/class/infiniband/*/ports/*"))):
            ca = pdir.split(os.sep)[-3]
            port = pdir.split(os.sep)[-1]
            ports[f"{ca}/{port}"] = {
                "state": _read(os.path.join(pdir, "state")),          # "4: ACTIVE"
                "phys_state": _read(os.path.join(pdir, "phys_state")),  # "5: LinkUp"
                "rate": _read(os.path.join(pdir, "rate")),            # "400 Gb/sec (4X NDR)"
                "link_layer": _read(os.path.join(pdir, "link_layer")),
                "counters": _counters(pdir),
            }
        netdevs = {}
        for ndir in sorted(glob.glob(os.path.join(root, "sys/class/net/*"))):
            name = os.path.basename(ndir)
            netdevs[name] = {"operstate": _read(os.path.join(ndir, "operstate")),
                             "speed_mbps": _read(os.path.join(ndir, "speed"))}
        r.data.update({"sysfs_root": root, "ib_ports": ports, "netdevs": netdevs})
        down = slow = 0
        rates = []
        for name, p in sorted(ports.items()):
            active = "ACTIVE" in p["state"].upper()
            rate = _rate_gbps(p["rate"])
            rates.append(rate)
            if not active:
                down += 1
                r.find("ib_port_down", f"IB port {name} is {p['state'] or 'unknown'} ({p['phys_state']})", port=name)
            elif want_rate and rate < float(want_rate):
                slow += 1
                r.find("ib_rate_low", f"IB port {name} runs at {p['rate']}, expected {want_rate} Gb/s", port=name,
                       value=rate)
        if want_ports is not None and len(ports) < int(want_ports):
            r.find("ib_port_missing", f"{len(ports)} IB ports under {root}sys/class/infiniband, expected {want_ports}",
                   value=len(ports))
        for name in exp.get("net_up", []):
            if netdevs.get(name, {}).get("operstate") != "up":
                r.find("net_down", f"network interface {name} is not up", port=name)
        # ibstat is a second opinion from the userspace stack (umad); its absence is noted only
        if ctx.tool("ibstat") or ports:
            run = ctx.run("ibstat", "ibstat", [], 30)
            # ibstat exits non-zero after an ibpanic (printed on stderr): what it listed before
            # it died, and the panic itself, are still read
            if run.ok or (run.rc not in (None, 0) and not run.problem()):
                try:
                    parsed = parse_ibstat(run.stdout + "\n" + (run.stderr or ""))
                    r.data["ibstat"] = parsed["ports"]
                    for p in parsed["ports"]:
                        name = f"{p['ca']}/{p['port']}"
                        sys_state = ports.get(name, {}).get("state", "")
                        if sys_state and ("ACTIVE" in sys_state.upper()) != (p["state"] == "Active"):
                            r.find("ib_state_disagree", f"{name}: sysfs says {sys_state!r}, ibstat says "
                                   f"{p['state']!r}", port=name)
                    if parsed["panics"]:
                        # ibstat died on a device: its listing is partial or empty (no device
                        # at all); said as an unreadable second opinion the judge weighs
                        r.data["ibstat_panics"] = parsed["panics"]
                        r.data["ibstat_error"] = parsed["panics"][0]
                        if parsed.get("no_device"):
                            r.find("ibstat_no_device", f"ibstat listed no IB device: {parsed['panics'][0]}",
                                   fail=False)
                except UnparseableOutput as exc:
                    r.data["ibstat_error"] = str(exc) if run.ok else f"exit {run.rc}: {exc}"
                    # said in the document, not only in data: the controller's policy weighs it
                    r.find("ibstat_unreadable", f"ibstat output cannot be read: {exc}", fail=False)
            else:
                r.data["ibstat_error"] = run.problem() or f"exit {run.rc}"
            r.evidence.append(run.evidence())
        r.metrics.update({"ib_ports": len(ports), "ports_down": down, "ports_slow": slow,
                          "min_rate_gbps": min(rates) if rates else None})
        if not ports and not want_ports:
            r.status = "unsupported"
            r.summary = "no InfiniBand ports on this host"
