"""XID errors seen during the run: NVML XID events plus the kernel log (``dmesg`` or a file).

Which XIDs are fatal comes from the plan (rendered from bringup/data/thresholds.yaml); any
other XID is reported as information.
"""

from typing import Any

from ..parsers.system import parse_kernel_xids
from .base import Check, CheckResult, Context


class XidCheck(Check):
    name = "xid"
    needs_gpu = True

    def run(self, ctx: Context, r: CheckResult) -> None:
        fatal = {int(x) for x in ctx.limits.get("fatal_xids", [])}
        events: list[dict[str, Any]] = []
        sources = []
        w = ctx.xid_watcher
        if w is not None and not w.error:
            sources.append("nvml")
            events += w.events
        elif w is not None:
            r.data["nvml_error"] = w.error
        log = ctx.plan.get("kernel_log") or {}
        text = None
        if log.get("path"):
            try:
                with open(log["path"], errors="replace") as fh:
                    text = fh.read()
                sources.append(f"file:{log['path']}")
            except OSError as exc:
                r.data["kernel_log_error"] = f"cannot read {log['path']}: {exc.strerror}"
        else:
            run = ctx.run("dmesg", "dmesg", [], 20)
            if run.ok:
                text = run.stdout
                sources.append("dmesg")
            else:
                # reading the kernel log may need root; NVML events still count
                r.data["kernel_log_error"] = run.problem() or f"dmesg exited {run.rc}: {run.stderr[-200:]}"
        bus_to_gpu = {}
        inv = ctx.results.get("inventory")
        if inv is not None:
            for g in inv.data.get("gpus", []):
                if g.get("pci_bus_id"):
                    # 00000000:18:00.0 -> 0000:18:00 as the kernel prints it
                    parts = g["pci_bus_id"].lower().split(":")
                    bus_to_gpu[f"{parts[0][-4:]}:{parts[1]}:{parts[2].split('.')[0]}"] = g["index"]
        if text is not None:
            for x in parse_kernel_xids(text):
                events.append({"gpu": bus_to_gpu.get(str(x["pci"])[:12]), "xid": x["xid"], "source": "kernel",
                               "pci": x["pci"], "line": x["line"]})
        r.data["sources"] = sources
        r.data["events"] = events
        fatal_seen = []
        for e in events:
            if e["xid"] in fatal:
                fatal_seen.append(e)
        reported = set()
        for e in fatal_seen:
            key = (e.get("gpu"), e["xid"])
            if key in reported:
                continue
            reported.add(key)
            where = f"GPU {e['gpu']}" if e.get("gpu") is not None else f"PCI {e.get('pci', '?')}"
            r.find("xid_fatal", f"{where}: fatal XID {e['xid']} ({e['source']})", gpu=e.get("gpu"), value=e["xid"])
        for e in events:
            if e["xid"] not in fatal:
                r.find("xid_other", f"XID {e['xid']} on GPU {e.get('gpu')} ({e['source']})", fail=False,
                       gpu=e.get("gpu"), value=e["xid"])
        r.metrics.update({"xid_count": len(events), "fatal_count": len(fatal_seen),
                          "codes": sorted({e["xid"] for e in events})})
        if not sources:
            r.status = "error"
            r.findings.append({"code": "xid_no_source", "severity": "error",
                               "message": "neither NVML events nor the kernel log could be read"})
