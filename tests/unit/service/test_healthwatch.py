"""The health watch's comparison of two looks (bringup.service.health). The looks are the
agent's own documents: its ECC, NVLink and XID checks run here on a scripted NVML."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bringup.acceptance.thresholds import load_thresholds_file
from bringup.service import health as hw
from burnin.checks.base import CheckResult, Context
from burnin.checks.gpu import EccCheck, NvlinkCheck
from burnin.nvml import Unsupported

POLICY = hw.load_policy()
FATAL = load_thresholds_file().fatal_xids


class Nvml:
    ok = True
    error = None
    pynvml = SimpleNamespace(NVML_NVLINK_MAX_LINKS=2)

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


def look(unc_volatile=0, unc_aggregate=0, corrected=0, remap=(0, 0, 0, 0), links_up=(1, 1), xids=(),
         ib_state="4: ACTIVE", ib_counters=None, errored=()):
    """One look as the agent would report it for a one-GPU node."""
    ecc = {(1, 0): unc_volatile, (1, 1): unc_aggregate, (0, 0): corrected, (0, 1): corrected}
    nvml = Nvml({"nvmlDeviceGetEccMode": [1, 1], "nvmlDeviceGetArchitecture": 9,
                 "nvmlDeviceGetTotalEccErrors": lambda h, e, c: ecc[(e, c)],
                 "nvmlDeviceGetRemappedRows": lambda h: remap,
                 "nvmlDeviceGetNvLinkState": lambda h, link: links_up[link],
                 "nvmlDeviceGetNvLinkErrorCounter": 0})
    checks = []
    for check in (EccCheck(), NvlinkCheck()):
        ctx = Context({}, nvml)
        ctx.handles = ["h0"]
        r = CheckResult(name=check.name)
        check.run(ctx, r)
        checks.append(r.to_dict())
    checks.append({"name": "xid", "status": "pass", "data": {"events": [
        {"gpu": 0, "xid": x, "source": "kernel", "line": f"NVRM: Xid (PCI:0000:18:00): {x}, pid=1"} for x in xids]}})
    port = {"state": ib_state, "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)"}
    if ib_counters is not None:
        port["counters"] = ib_counters
    checks.append({"name": "network", "status": "pass", "data": {"ib_ports": {"mlx5_0/1": port}}})
    for name in errored:
        checks.append({"name": name, "status": "error", "findings": [{"message": "dmesg: read kernel buffer failed"}]})
    return hw.snapshot({"checks": checks}, wanted=POLICY.checks)


def codes(signals):
    return [(s.code, s.severity) for s in signals]


def test_a_quiet_node_raises_nothing_and_round_trips_through_json():
    a = look(ib_counters={"link_downed": 1, "symbol_error": 3})
    b = hw.Snapshot.from_json(a.to_json())
    assert b == a
    # inventory was wanted but not run here: unreadable, a warning and nothing else
    assert codes(hw.assess(POLICY, a, a, fatal_xids=FATAL)) == [("check_unreadable", "warning")]


def test_new_uncorrectable_ecc_is_critical_old_lifetime_count_is_not():
    before = look(unc_aggregate=2)
    assert not [s for s in hw.assess(POLICY, before, look(unc_aggregate=2)) if s.code.startswith("ecc")]
    sig = [s for s in hw.assess(POLICY, before, look(unc_aggregate=3, unc_volatile=1)) if s.code.startswith("ecc")]
    assert codes(sig) == [("ecc_uncorrected_new", "critical")]


def test_growing_ecc_counts_after_admission():
    prev = look(corrected=10)
    assert codes([s for s in hw.assess(POLICY, prev, look(corrected=50)) if s.code.startswith("ecc")]) == []
    assert codes([s for s in hw.assess(POLICY, prev, look(corrected=500)) if s.code.startswith("ecc")]) == [
        ("ecc_corrected_growth", "warning")]
    # the driver reloaded: volatile counts restart, the new ones are all new
    assert any(s.code == "ecc_uncorrected_new" for s in hw.assess(POLICY, look(unc_volatile=5), look(unc_volatile=1)))


def test_an_xid_that_appears_later():
    prev = look(xids=(13,))
    sig = hw.assess(POLICY, prev, look(xids=(13, 79)), fatal_xids=FATAL)
    assert ("xid_fatal", "critical") in codes(sig) and ("xid_other", "warning") not in codes(sig)
    assert sig[0].severity == "critical"  # critical first
    assert "XID 79" in sig[0].message


def test_row_remap_and_nvlink_down():
    sig = codes(hw.assess(POLICY, look(), look(remap=(0, 1, 1, 0), links_up=(1, 0))))
    assert ("row_remap_pending", "critical") in sig and ("nvlink_down", "critical") in sig
    # a link already down at the last look is not news
    assert ("nvlink_down", "critical") not in codes(hw.assess(POLICY, look(links_up=(1, 0)), look(links_up=(1, 0))))


def test_a_flapping_ib_port():
    prev = look(ib_counters={"link_downed": 1, "symbol_error": 0})
    sig = codes(hw.assess(POLICY, prev, look(ib_counters={"link_downed": 3, "symbol_error": 40})))
    assert ("ib_link_downed_growth", "critical") in sig and ("ib_error_growth", "warning") in sig
    assert ("ib_port_down", "critical") in codes(hw.assess(POLICY, prev, look(ib_state="1: DOWN")))


def test_an_errored_check_is_a_warning_never_health():
    sig = hw.assess(POLICY, look(), look(errored=("xid",)))
    assert ("check_unreadable", "warning") in codes(sig)
    assert any("dmesg" in s.message for s in sig)


@pytest.mark.parametrize("cond, expected", [
    (hw.Condition("KernelDeadlock", "True", "DockerHung", "task docker:7 blocked for more than 120 seconds."),
     ("condition_KernelDeadlock", "critical")),
    (hw.Condition("ReadonlyFilesystem", "True", "FilesystemIsReadOnly", "Remounting filesystem read-only"),
     ("condition_ReadonlyFilesystem", "critical")),
    (hw.Condition("Ready", "False", "KubeletNotReady", "PLEG is not healthy"), ("condition_Ready", "warning")),
    (hw.Condition("XfsHasShutdown", "True", "XfsShutdown", "XFS shut down"), ("condition_XfsHasShutdown", "warning")),
])
def test_node_problem_detector_conditions(cond, expected):
    assert codes(hw.condition_signals(POLICY, [cond])) == [expected]
    healthy = [hw.Condition("KernelDeadlock", "False", "KernelHasNoDeadlock", "kernel has no deadlock"),
               hw.Condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")]
    assert hw.condition_signals(POLICY, healthy) == []


def test_a_policy_without_a_rule_for_a_signal_is_refused(tmp_path):
    from bringup.errors import ConfigError
    text = (hw.data_file("healthwatch.yaml")).read_text().replace("  row_remap_failure: {severity: critical}\n", "")
    (tmp_path / "h.yaml").write_text(text)
    with pytest.raises(ConfigError, match="row_remap_failure"):
        hw.load_policy(tmp_path / "h.yaml")


def test_a_device_plugin_that_lost_gpus_is_critical_and_an_odd_answer_unknown():
    assert codes(hw.allocatable_signals(POLICY, {"nvidia.com/gpu": "7"}, 8)) == [("gpus_unallocatable", "critical")]
    assert hw.allocatable_signals(POLICY, {"nvidia.com/gpu": "8"}, 8) == []
    assert codes(hw.allocatable_signals(POLICY, {}, 8)) == [("check_unreadable", "warning")]
    sig = hw.assess(POLICY, look(), look(), allocatable={"nvidia.com/gpu": "6"}, expected_gpus=8)
    assert sig[0].code == "gpus_unallocatable" and "advertises 6" in sig[0].message
