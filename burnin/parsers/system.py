"""Parsers for host tools: kernel log XIDs, fio JSON, stress-ng, dpkg-query (ibstat: ``ibstat.py``)."""

import json
import re

from . import UnparseableOutput

# NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.
_XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+),?(.*)$")


def parse_kernel_xids(text: str) -> list[dict[str, object]]:
    out = []
    for line in text.splitlines():
        m = _XID.search(line)
        if m:
            out.append({"pci": m.group(1).lower(), "xid": int(m.group(2)), "line": line.strip()[:300]})
    return out


def parse_fio_json(text: str) -> dict[str, float]:
    start = text.find("{")
    if start < 0:
        raise UnparseableOutput("fio printed no JSON (was --output-format=json given?)")
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start:])
        jobs = doc["jobs"]
        read_kib = sum(float(j["read"]["bw"]) for j in jobs)
        write_kib = sum(float(j["write"]["bw"]) for j in jobs)
        errors = sum(int(j.get("error", 0)) for j in jobs)
    except (ValueError, KeyError, TypeError) as exc:
        raise UnparseableOutput(f"fio JSON lacks jobs[].read/write.bw: {exc}") from None
    return {"read_mib_s": read_kib / 1024.0, "write_mib_s": write_kib / 1024.0, "job_errors": errors,
            "fio_version": doc.get("fio version", "")}


def parse_stress_ng(text: str) -> dict[str, object]:
    """stress-ng ``--metrics-brief`` lines -> bogo ops per stressor and the run outcome."""
    ops: dict[str, float] = {}
    for line in text.splitlines():
        m = re.search(r"stress-ng: (?:metrc|info):\s+\[\d+\]\s+([a-z0-9-]+)\s+(\d+)\s+[0-9.]+\s+[0-9.]+\s+"
                      r"[0-9.]+\s+([0-9.]+)", line)
        if m and m.group(1) not in ("stressor",):
            ops[m.group(1)] = float(m.group(3))
    unsuccessful = "unsuccessful run completed" in text
    successful = "successful run completed" in text and not unsuccessful
    failed = re.findall(r"(\d+) failed", text)
    return {"bogo_ops_per_s": ops, "successful": successful, "unsuccessful": unsuccessful,
            "failed": max((int(f) for f in failed), default=0)}


def parse_dpkg_query(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].strip():
            out[parts[0].strip().split(":")[0]] = parts[1].strip()
    return out
