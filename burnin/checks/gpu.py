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
    """ECC mode and error counts. *Volatile* counts (since the last driver load, so this
    run) judge the run; *aggregate* counts are the GPU's lifetime: they are reported (the
    controller trend-checks them between burn-ins) and fail only above the lifetime limits
    of the plan (bringup/data/thresholds.yaml cites where they come from)."""

    name = "ecc"

    def run(self, ctx: Context, r: CheckResult) -> None:
        n = ctx.nvml
        p = n.pynvml
        lim = ctx.limits
        max_unc = int(lim.get("max_ecc_uncorrected", 0))
        max_corr = lim.get("max_ecc_corrected_volatile")
        life = {"uncorrected_aggregate": lim.get("max_ecc_uncorrected_aggregate"),
                "corrected_aggregate": lim.get("max_ecc_corrected_aggregate"),
                "sram_uncorrected_aggregate": lim.get("max_ecc_sram_uncorrected_aggregate"),
                "sram_corrected_aggregate": lim.get("max_ecc_sram_corrected_aggregate")}
        max_remapped = lim.get("max_remapped_rows_uncorrectable")
        want_ecc = ctx.expect.get("ecc", "enabled") == "enabled"
        totals = {"ecc_disabled_gpus": 0, "ecc_pending_gpus": 0, "uncorrected_volatile": 0,
                  "uncorrected_aggregate": 0, "corrected_volatile": 0, "corrected_aggregate": 0,
                  "row_remap_pending_gpus": 0, "row_remap_failure_gpus": 0, "retired_pages": 0,
                  "lifetime_limit_gpus": 0, "remapped_rows_uncorrectable_max": None}
        sram = getattr(p, "NVML_MEMORY_LOCATION_SRAM", None)
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
                                      ("corrected_volatile", 0, 0), ("corrected_aggregate", 0, 1)):
                v = n.opt("nvmlDeviceGetTotalEccErrors", h, etype, ctype)
                g[key] = v
                if v is not None:
                    totals[key] += int(v)
            if sram is not None:
                # SRAM errors apart from DRAM where the driver tells them (Ampere and later)
                for key, etype in (("sram_uncorrected_aggregate", 1), ("sram_corrected_aggregate", 0)):
                    try:
                        g[key] = n.call("nvmlDeviceGetMemoryErrorCounter", h, etype, 1, sram)
                    except (Unsupported, NvmlFailure):
                        g[key] = None
            if (g.get("uncorrected_volatile") or 0) > max_unc:
                r.find("ecc_uncorrectable", f"GPU {i}: {g['uncorrected_volatile']} uncorrectable ECC errors "
                       "since the driver loaded", gpu=i, value=g["uncorrected_volatile"])
            if max_corr is not None and (g.get("corrected_volatile") or 0) > int(max_corr):
                r.find("ecc_corrected_high", f"GPU {i}: {g['corrected_volatile']} corrected ECC errors "
                       f"(limit {max_corr})", gpu=i, value=g["corrected_volatile"])
            over = [k for k, limit in life.items()
                    if limit is not None and g.get(k) is not None and int(g[k]) > int(limit)]
            if over:
                totals["lifetime_limit_gpus"] += 1
                r.find("ecc_lifetime_limit", f"GPU {i}: lifetime ECC counts above the limit: "
                       + ", ".join(f"{k} {g[k]} > {life[k]}" for k in over), gpu=i, value=g[over[0]])
            elif g.get("uncorrected_aggregate"):
                r.find("ecc_aggregate", f"GPU {i}: {g['uncorrected_aggregate']} uncorrectable ECC errors over its "
                       "lifetime (within the lifetime limit)", fail=False, gpu=i, value=g["uncorrected_aggregate"])
            arch = n.opt("nvmlDeviceGetArchitecture", h)
            g["arch"] = arch
            if arch is None or arch >= NVML_ARCH_AMPERE:
                rows = n.opt("nvmlDeviceGetRemappedRows", h)
                if rows is not None:
                    supported_any = True
                    g["remapped_rows"] = {"correctable": rows[0], "uncorrectable": rows[1],
                                          "pending": bool(rows[2]), "failure": bool(rows[3])}
                    worst = totals["remapped_rows_uncorrectable_max"]
                    totals["remapped_rows_uncorrectable_max"] = max(int(rows[1]), worst or 0)
                    if max_remapped is not None and int(rows[1]) > int(max_remapped):
                        r.find("row_remap_high", f"GPU {i}: {rows[1]} rows remapped for uncorrectable errors "
                               f"(limit {max_remapped})", gpu=i, value=rows[1])
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
    """PCIe link generation and width, judged only from samples taken while a stress check
    loaded the GPUs: at idle a GPU trains its link down to save power (Gen1 is normal
    then), so an idle reading says nothing about the slot. Under load the best link seen
    per GPU is what it can do; a link that never reaches the SKU's is downtrained."""

    name = "pcie"

    def run(self, ctx: Context, r: CheckResult) -> None:
        n = ctx.nvml
        exp = ctx.expect
        max_replay = ctx.limits.get("max_pcie_replay")
        downtrained = replays = 0
        gens, widths = [], []
        per_gpu = []
        unjudged = []
        for i, h in enumerate(ctx.handles):
            max_gen = n.opt("nvmlDeviceGetMaxPcieLinkGeneration", h)
            max_width = n.opt("nvmlDeviceGetMaxPcieLinkWidth", h)
            loaded = [s for s in ctx.samples if s["gpu"] == i and s.get("load")]
            idle = sum(1 for s in ctx.samples if s["gpu"] == i and not s.get("load"))
            cur_gen = max((s["pcie_gen"] for s in loaded if s.get("pcie_gen")), default=None)
            cur_width = max((s["pcie_width"] for s in loaded if s.get("pcie_width")), default=None)
            replay = n.opt("nvmlDeviceGetPcieReplayCounter", h)
            want_gen = exp.get("pcie_gen") or max_gen
            want_width = exp.get("pcie_width") or max_width
            per_gpu.append({"gpu": i, "max_gen": max_gen, "max_width": max_width, "gen_under_load": cur_gen,
                            "width_under_load": cur_width, "replay": replay, "samples_under_load": len(loaded),
                            "idle_samples_ignored": idle})
            if replay is not None:
                replays += int(replay)
                if max_replay is not None and replay > int(max_replay):
                    r.find("pcie_replays", f"GPU {i}: PCIe replay counter {replay} (limit {max_replay})",
                           gpu=i, value=replay)
            if cur_gen is None or cur_width is None:
                unjudged.append(i)
                continue
            gens.append(cur_gen)
            widths.append(cur_width)
            if (want_gen and cur_gen < int(want_gen)) or (want_width and cur_width < int(want_width)):
                downtrained += 1
                r.find("pcie_downtrained", f"GPU {i}: PCIe link at best Gen{cur_gen} x{cur_width} under load, "
                       f"expected Gen{want_gen} x{want_width}", gpu=i, value=f"gen{cur_gen}x{cur_width}")
        r.data["gpus"] = per_gpu
        r.metrics.update({"downtrained_gpus": downtrained, "replay_total": replays,
                          "gen_min": min(gens) if gens else None, "width_min": min(widths) if widths else None,
                          "gpus_unjudged": len(unjudged)})
        if unjudged and r.status == "pass":
            # no sample under load for these GPUs: their link was not judged, so no pass
            r.status = "unsupported"
            r.summary = (f"no PCIe link sample under load for GPU {', '.join(map(str, unjudged))}; "
                         "idle readings are not judged")


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
