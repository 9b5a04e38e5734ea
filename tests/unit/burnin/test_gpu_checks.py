"""GPU checks against a scripted NVML (what a pre-Ampere part or an old driver answers),
for the branches the lab's Hopper profiles never take."""

from types import SimpleNamespace

from burnin.checks.base import CheckResult, Context
from burnin.checks.gpu import ClocksCheck, EccCheck
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
