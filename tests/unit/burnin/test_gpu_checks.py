"""GPU checks against a scripted NVML (what a pre-Ampere part or an old driver answers),
for the branches the lab's Hopper profiles never take."""

from types import SimpleNamespace

from burnin.checks.base import CheckResult, Context
from burnin.checks.gpu import ClocksCheck, EccCheck, PcieCheck
from burnin.nvml import Unsupported


class ScriptedNvml:
    ok = True
    error = None
    pynvml = SimpleNamespace(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS=0,
                             NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR=1, NVML_NVLINK_MAX_LINKS=18)

    def __init__(self, answers):
        self.answers = answers

    def call(self, name, *args):
        if name not in self.answers:
            raise Unsupported(name)
        v = self.answers[name]
        return v(*args) if callable(v) else v

    def opt(self, name, *args):
        try:
            return self.call(name, *args)
        except Unsupported:
            return None


def run(check, nvml, plan=None, samples=None):
    ctx = Context(plan or {}, nvml)
    ctx.handles = ["h0"]
    ctx.samples = samples or []
    r = CheckResult(name=check.name)
    check.run(ctx, r)
    return r


def test_volta_uses_retired_pages_not_row_remapping():
    nvml = ScriptedNvml({
        "nvmlDeviceGetEccMode": [1, 1], "nvmlDeviceGetTotalEccErrors": 0, "nvmlDeviceGetArchitecture": 5,
        "nvmlDeviceGetRetiredPages": lambda h, cause: [0x1000] * (2 if cause == 1 else 1),
        "nvmlDeviceGetRetiredPagesPendingStatus": 1,
        "nvmlDeviceGetRemappedRows": lambda h: (_ for _ in ()).throw(AssertionError("not on Volta")),
    })
    r = run(EccCheck(), nvml)
    assert r.metrics["retired_pages"] == 3
    assert r.status == "fail" and [f["code"] for f in r.findings] == ["retired_pages_pending"]


def test_gpu_without_ecc_or_remapping_is_unsupported():
    r = run(EccCheck(), ScriptedNvml({"nvmlDeviceGetArchitecture": 9}))
    assert r.status == "unsupported"


def test_benign_clock_reasons_pass_and_hw_slowdown_fails():
    base = {"gpu": 0, "temp_c": 70, "power_mw": 690000, "pcie_gen": 5, "pcie_width": 16}
    idle_and_cap = [dict(base, reasons=0x1), dict(base, reasons=0x4 | 0x10)]
    r = run(ClocksCheck(), ScriptedNvml({}), {"limits": {"max_temp_c": 87}}, idle_and_cap)
    assert r.status == "pass" and r.data["gpus"][0]["reasons_seen"] == ["gpu_idle", "sw_power_cap", "sync_boost"]
    r = run(ClocksCheck(), ScriptedNvml({}), {"limits": {"max_temp_c": 87}}, [dict(base, reasons=0x8)])
    assert r.status == "fail" and r.findings[0]["code"] == "hw_slowdown"


# --- PCIe: judged under load only -------------------------------------------------------------
PCIE = {"nvmlDeviceGetMaxPcieLinkGeneration": 5, "nvmlDeviceGetMaxPcieLinkWidth": 16,
        "nvmlDeviceGetPcieReplayCounter": 0}
EXPECT = {"expect": {"pcie_gen": 5, "pcie_width": 16}}


def sample(gen, width, load):
    return {"gpu": 0, "pcie_gen": gen, "pcie_width": width, "load": load}


def test_pcie_idle_gen1_readings_are_not_judged():
    # at idle a healthy H100 reports Gen1; under gpu-burn it reports Gen5 x16
    samples = [sample(1, 16, None), sample(5, 16, "gpu_burn"), sample(1, 16, None)]
    r = run(PcieCheck(), ScriptedNvml(PCIE), EXPECT, samples)
    assert r.status == "pass", r.findings
    assert r.data["gpus"][0]["idle_samples_ignored"] == 2 and r.metrics["gen_min"] == 5


def test_pcie_downtrained_under_load_fails():
    samples = [sample(5, 8, "nccl"), sample(5, 8, "gpu_burn"), sample(1, 8, None)]
    r = run(PcieCheck(), ScriptedNvml(PCIE), EXPECT, samples)
    assert r.status == "fail" and r.findings[0]["code"] == "pcie_downtrained"
    assert "Gen5 x8 under load" in r.findings[0]["message"]


def test_pcie_without_a_sample_under_load_is_not_a_pass():
    r = run(PcieCheck(), ScriptedNvml(PCIE), EXPECT, [sample(5, 16, None)])
    assert r.status == "unsupported" and "idle readings are not judged" in r.summary


# --- ECC: volatile judges the run, aggregate only above the lifetime limit ---------------------------
def ecc_nvml(unc_vol, unc_agg, corr_agg=0):
    counts = {(1, 0): unc_vol, (1, 1): unc_agg, (0, 0): 0, (0, 1): corr_agg}
    return ScriptedNvml({"nvmlDeviceGetEccMode": [1, 1], "nvmlDeviceGetArchitecture": 9,
                         "nvmlDeviceGetTotalEccErrors": lambda h, e, c: counts[(e, c)],
                         "nvmlDeviceGetRemappedRows": (0, 3, 0, 0)})


LIFETIME = {"limits": {"max_ecc_uncorrected": 0, "max_ecc_uncorrected_aggregate": 20_000_000,
                       "max_ecc_corrected_aggregate": 20_000_000, "max_remapped_rows_uncorrectable": 512}}


def test_old_lifetime_uncorrectables_are_reported_not_failed():
    r = run(EccCheck(), ecc_nvml(0, 7), LIFETIME)
    assert r.status == "pass"
    assert [(f["code"], f["severity"]) for f in r.findings] == [("ecc_aggregate", "info")]
    assert r.metrics["uncorrected_aggregate"] == 7 and r.metrics["lifetime_limit_gpus"] == 0
    assert r.metrics["remapped_rows_uncorrectable_max"] == 3


def test_uncorrectables_of_this_run_fail():
    r = run(EccCheck(), ecc_nvml(2, 2), LIFETIME)
    assert r.status == "fail" and r.findings[0]["code"] == "ecc_uncorrectable"


def test_lifetime_counts_above_the_limit_fail():
    r = run(EccCheck(), ecc_nvml(0, 0, corr_agg=20_000_001), LIFETIME)
    assert r.status == "fail" and r.findings[0]["code"] == "ecc_lifetime_limit"
    assert r.metrics["lifetime_limit_gpus"] == 1
