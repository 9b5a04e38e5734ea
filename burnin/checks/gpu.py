"""NVML checks: inventory, ECC and memory health, NVLink, and (from the samples taken under
load) PCIe link state and clock event reasons."""

from typing import Any

from ..nvml import NvmlFailure, Unsupported
from .base import Check, CheckResult, Context

# nvmlClocksEventReason* bits: the ones that mean the GPU is being held back by heat or
# power delivery. Idle, application clocks, SW power cap and sync boost are benign.
REASON_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock",
}
THERMAL_BITS = 0x20 | 0x40
POWER_BRAKE_BITS = 0x80
HW_SLOWDOWN = 0x8
NVML_ARCH_AMPERE = 7
NVLINK_COUNTERS = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data"}


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASON_BITS.items() if mask & bit]


class GpuCheck(Check):
    needs_gpu = True

    def supported(self, ctx: Context):
        return None


class InventoryCheck(GpuCheck):
    name = "inventory"

    def run(self, ctx: Context, r: CheckResult) -> None:
        n = ctx.nvml
        gpus = []
        for i, h in enumerate(ctx.handles):
            g: dict[str, Any] = {"index": i}
            for key, fn in (("name", "nvmlDeviceGetName"), ("uuid", "nvmlDeviceGetUUID"),
                            ("serial", "nvmlDeviceGetSerial"), ("vbios", "nvmlDeviceGetVbiosVersion")):
                g[key] = n.opt(fn, h)
            pci = n.opt("nvmlDeviceGetPciInfo", h)
            g["pci_bus_id"] = (pci.busId.decode() if isinstance(pci.busId, bytes) else pci.busId) if pci else None
            try:
                g["memory_mib"] = n.memory_total(h) // (1024 * 1024)
            except Unsupported:
                g["memory_mib"] = None
            gpus.append(g)
        r.data["gpus"] = gpus
        r.data["driver_version"] = n.opt("nvmlSystemGetDriverVersion")
        cuda = n.opt("nvmlSystemGetCudaDriverVersion")
        r.data["cuda_driver_version"] = f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None
        r.metrics["gpu_count"] = len(gpus)
        mems = [g["memory_mib"] for g in gpus if g["memory_mib"]]
        r.metrics["memory_mib_min"] = min(mems) if mems else None
        exp = ctx.expect
        want = exp.get("gpu_count")
        if want is not None and len(gpus) != int(want):
            r.find("gpu_count_mismatch", f"expected {want} GPUs, NVML enumerates {len(gpus)}",
                   value=len(gpus), limit=want)
        for g in gpus:
            if exp.get("gpu_name") and g["name"] and g["name"] != exp["gpu_name"]:
                r.find("gpu_model_mismatch", f"GPU {g['index']} is {g['name']!r}, expected {exp['gpu_name']!r}",
                       gpu=g["index"])
            # NVML reports a little less than the marketing size on some parts: allow 1%
            if exp.get("memory_mib") and g["memory_mib"] and g["memory_mib"] < 0.99 * exp["memory_mib"]:
                r.find("gpu_memory_mismatch", f"GPU {g['index']} has {g['memory_mib']} MiB, expected "
                       f"{exp['memory_mib']} MiB", gpu=g["index"], value=g["memory_mib"])
        if r.status == "pass":  # otherwise the findings make the summary
            r.summary = f"{len(gpus)} GPUs: " + ", ".join(sorted({str(g['name']) for g in gpus}))


class EccCheck(GpuCheck):
    name = "ecc"

    def run(self, ctx: Context, r: CheckResult) -> None:
        n = ctx.nvml
        p = n.pynvml
        lim = ctx.limits
        max_unc = int(lim.get("max_ecc_uncorrected", 0))
        max_corr = lim.get("max_ecc_corrected_volatile")
        want_ecc = ctx.expect.get("ecc", "enabled") == "enabled"
        totals = {"ecc_disabled_gpus": 0, "ecc_pending_gpus": 0, "uncorrected_volatile": 0,
                  "uncorrected_aggregate": 0, "corrected_volatile": 0, "row_remap_pending_gpus": 0,
                  "row_remap_failure_gpus": 0, "retired_pages": 0}
        per_gpu = []
        supported_any = False
        for i, h in enumerate(ctx.handles):
            g: dict[str, Any] = {"gpu": i}
            mode = n.opt("nvmlDeviceGetEccMode", h)
            if mode is not None:
                supported_any = True
                g["ecc_current"], g["ecc_pending"] = bool(mode[0]), bool(mode[1])
                if want_ecc and not g["ecc_current"]:
                    totals["ecc_disabled_gpus"] += 1
                    r.find("ecc_disabled", f"GPU {i}: ECC is disabled", gpu=i)
                if g["ecc_current"] != g["ecc_pending"]:
                    totals["ecc_pending_gpus"] += 1
                    r.find("ecc_pending", f"GPU {i}: ECC mode change pending (current "
                           f"{'on' if g['ecc_current'] else 'off'}, pending {'on' if g['ecc_pending'] else 'off'})",
                           gpu=i)
            for key, etype, ctype in (("uncorrected_volatile", 1, 0), ("uncorrected_aggregate", 1, 1),
                                      ("corrected_volatile", 0, 0)):
                v = n.opt("nvmlDeviceGetTotalEccErrors", h, etype, ctype)
                g[key] = v
                if v is not None:
                    totals[key] += int(v)
            unc = max(g.get("uncorrected_volatile") or 0, g.get("uncorrected_aggregate") or 0)
            if unc > max_unc:
                r.find("ecc_uncorrectable", f"GPU {i}: {unc} uncorrectable ECC errors", gpu=i, value=unc)
            if max_corr is not None and (g.get("corrected_volatile") or 0) > int(max_corr):
                r.find("ecc_corrected_high", f"GPU {i}: {g['corrected_volatile']} corrected ECC errors "
                       f"(limit {max_corr})", gpu=i, value=g["corrected_volatile"])
            arch = n.opt("nvmlDeviceGetArchitecture", h)
            g["arch"] = arch
            if arch is None or arch >= NVML_ARCH_AMPERE:
                rows = n.opt("nvmlDeviceGetRemappedRows", h)
                if rows is not None:
                    supported_any = True
                    g["remapped_rows"] = {"correctable": rows[0], "uncorrectable": rows[1],
                                          "pending": bool(rows[2]), "failure": bool(rows[3])}
                    if rows[2]:
                        totals["row_remap_pending_gpus"] += 1
                        r.find("row_remap_pending", f"GPU {i}: a row remapping is pending (needs a GPU reset)",
                               gpu=i)
                    if rows[3]:
                        totals["row_remap_failure_gpus"] += 1
                        r.find("row_remap_failure", f"GPU {i}: row remapping failed (no spare rows left)", gpu=i)
            if arch is not None and arch < NVML_ARCH_AMPERE:
                # pre-Ampere parts retire pages instead of remapping rows
                pages = 0
                for cause in (p.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                              p.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR):
                    got = n.opt("nvmlDeviceGetRetiredPages", h, cause)
                    pages += len(got or [])
                g["retired_pages"] = pages
                totals["retired_pages"] += pages
                if n.opt("nvmlDeviceGetRetiredPagesPendingStatus", h):
                    r.find("retired_pages_pending", f"GPU {i}: page retirement pending (needs a reboot)", gpu=i)
            per_gpu.append(g)
        r.data["gpus"] = per_gpu
        r.metrics.update(totals)
        if not supported_any and ctx.handles:
            r.status = "unsupported"
            r.summary = "ECC mode and row remapping are not supported on these GPUs"


class NvlinkCheck(GpuCheck):
    name = "nvlink"

    def run(self, ctx: Context, r: CheckResult) -> None:
        n = ctx.nvml
        p = n.pynvml
        max_err = int(ctx.limits.get("max_nvlink_errors", 0))
        want_links = ctx.expect.get("nvlink_links")
        down = errors = active = 0
        per_gpu = []
        for i, h in enumerate(ctx.handles):
            links = []
            for link in range(p.NVML_NVLINK_MAX_LINKS):
                try:
                    state = n.call("nvmlDeviceGetNvLinkState", h, link)
                except Unsupported:
                    break
                except NvmlFailure:
                    break  # INVALID_ARGUMENT past the last link this GPU has
                counters = {}
                for c, cname in NVLINK_COUNTERS.items():
                    counters[cname] = n.opt("nvmlDeviceGetNvLinkErrorCounter", h, link, c)
                links.append({"link": link, "active": bool(state), "errors": counters})
                if state:
                    active += 1
                else:
                    down += 1
                    r.find("nvlink_down", f"GPU {i} NVLink {link} is down", gpu=i, link=link)
                total = sum(v for v in counters.values() if v)
                errors += total
                if total > max_err:
                    r.find("nvlink_errors", f"GPU {i} NVLink {link}: {total} errors "
                           f"({', '.join(f'{k}={v}' for k, v in counters.items() if v)})",
                           gpu=i, link=link, value=total)
            if want_links and links and len(links) < int(want_links):
                r.find("nvlink_missing", f"GPU {i} has {len(links)} NVLinks, expected {want_links}", gpu=i)
            per_gpu.append({"gpu": i, "links": links})
        r.data["gpus"] = per_gpu
        r.metrics.update({"links_active": active, "links_down": down, "error_total": errors})
        if not any(g["links"] for g in per_gpu):
            r.status = "unsupported"
            r.summary = "these GPUs report no NVLinks"


class PcieCheck(GpuCheck):
    name = "pcie"

    def run(self, ctx: Context, r: CheckResult) -> None:
        n = ctx.nvml
        exp = ctx.expect
        max_replay = ctx.limits.get("max_pcie_replay")
        downtrained = replays = 0
        gens, widths = [], []
        per_gpu = []
        for i, h in enumerate(ctx.handles):
            max_gen = n.opt("nvmlDeviceGetMaxPcieLinkGeneration", h)
            max_width = n.opt("nvmlDeviceGetMaxPcieLinkWidth", h)
            samples = [s for s in ctx.samples if s["gpu"] == i]
            cur_gen = min((s["pcie_gen"] for s in samples if s.get("pcie_gen")), default=None)
            cur_width = min((s["pcie_width"] for s in samples if s.get("pcie_width")), default=None)
            replay = n.opt("nvmlDeviceGetPcieReplayCounter", h)
            want_gen = exp.get("pcie_gen") or max_gen
            want_width = exp.get("pcie_width") or max_width
            per_gpu.append({"gpu": i, "max_gen": max_gen, "max_width": max_width, "gen_under_load": cur_gen,
                            "width_under_load": cur_width, "replay": replay, "samples": len(samples)})
            if cur_gen is None or cur_width is None:
                continue
            gens.append(cur_gen)
            widths.append(cur_width)
            if (want_gen and cur_gen < int(want_gen)) or (want_width and cur_width < int(want_width)):
                downtrained += 1
                r.find("pcie_downtrained", f"GPU {i}: PCIe link at Gen{cur_gen} x{cur_width} under load, "
                       f"expected Gen{want_gen} x{want_width}", gpu=i, value=f"gen{cur_gen}x{cur_width}")
            if replay is not None:
                replays += int(replay)
                if max_replay is not None and replay > int(max_replay):
                    r.find("pcie_replays", f"GPU {i}: PCIe replay counter {replay} (limit {max_replay})",
                           gpu=i, value=replay)
        r.data["gpus"] = per_gpu
        r.metrics.update({"downtrained_gpus": downtrained, "replay_total": replays,
                          "gen_min": min(gens) if gens else None, "width_min": min(widths) if widths else None})
        if not gens and ctx.handles:
            r.status = "unsupported"
            r.summary = "PCIe link state is not reported by these GPUs"


class ClocksCheck(GpuCheck):
    name = "clocks"

    def run(self, ctx: Context, r: CheckResult) -> None:
        max_temp = ctx.limits.get("max_temp_c")
        temps: list[int] = []
        powers: list[int] = []
        thermal, brake = set(), set()
        per_gpu = []
        for i, _ in enumerate(ctx.handles):
            samples = [s for s in ctx.samples if s["gpu"] == i]
            seen = 0
            for s in samples:
                if s.get("reasons") is not None:
                    seen |= int(s["reasons"])
            t = [s["temp_c"] for s in samples if s.get("temp_c") is not None]
            pw = [s["power_mw"] for s in samples if s.get("power_mw") is not None]
            temps += t
            powers += pw
            per_gpu.append({"gpu": i, "reasons_seen": reason_names(seen), "max_temp_c": max(t, default=None),
                            "max_power_w": round(max(pw) / 1000, 1) if pw else None, "samples": len(samples)})
            if seen & THERMAL_BITS:
                thermal.add(i)
                r.find("thermal_slowdown", f"GPU {i}: clocks held back by thermal slowdown under load "
                       f"({', '.join(reason_names(seen & THERMAL_BITS))})", gpu=i)
            if seen & POWER_BRAKE_BITS:
                brake.add(i)
                r.find("power_brake", f"GPU {i}: hardware power brake slowdown asserted under load", gpu=i)
            elif seen & HW_SLOWDOWN and not seen & THERMAL_BITS:
                r.find("hw_slowdown", f"GPU {i}: hardware slowdown asserted under load", gpu=i)
            if max_temp is not None and t and max(t) > float(max_temp):
                r.find("temperature_high", f"GPU {i}: {max(t)} C under load (limit {max_temp} C)", gpu=i,
                       value=max(t))
        r.data["gpus"] = per_gpu
        r.metrics.update({"max_temp_c": max(temps) if temps else None,
                          "max_power_w": round(max(powers) / 1000, 1) if powers else None,
                          "thermal_slowdown_gpus": len(thermal), "power_brake_gpus": len(brake),
                          "samples": len(ctx.samples)})
        if not any(s.get("reasons") is not None or s.get("temp_c") is not None for s in ctx.samples):
            r.status = "unsupported"
            r.summary = "no clock event reasons or temperatures could be sampled"
