"""Which critical signals take one GPU out and which the node (bringup.service.gpu_scope)."""

from __future__ import annotations

import pytest

from bringup.errors import ConfigError
from bringup.service.gpu_scope import GpuCount, GpuOut, decide, load_policy
from bringup.service.health import Signal

POLICY = load_policy()


def xid(gpu, code=48):
    return Signal("xid_fatal", "critical", f"GPU {gpu}: XID {code} since the last look",
                  {"gpu": str(gpu), "xid": code, "line": f"NVRM: Xid (PCI:0000:1{gpu}:00): {code}"})


def remap(gpu):
    return Signal("row_remap_failure", "critical", f"GPU {gpu}: row remapping failed", {"gpu": str(gpu)})


def short(allocatable, expected=8):
    return Signal("gpus_unallocatable", "critical", f"the device plugin advertises {allocatable}",
                  {"allocatable": allocatable, "expected": expected})


def test_one_gpus_fatal_xid_on_a_dra_site_takes_out_that_gpu_only():
    s = decide(POLICY, [xid(3)], isolation="dra", expected_gpus=8)
    assert not s.node_goes
    assert s.gpus == (GpuOut(3, "xid_fatal", "GPU 3: XID 48 since the last look", 48),)
    assert s.gpus[0].taint(POLICY) == ("gpu.nvidia.com/xid", "48")


def test_a_finding_that_is_no_xid_gets_bringups_taint_key():
    s = decide(POLICY, [remap(5)], isolation="dra", expected_gpus=8)
    assert s.gpus[0].taint(POLICY) == ("bringup.io/gpu-quarantine", "row_remap_failure")


def test_a_second_gpu_out_sends_the_node():
    s = decide(POLICY, [xid(1)], isolation="dra", expected_gpus=8, out_already=[3])
    assert s.node_goes and s.gpus == ()
    assert s.why_node == "2 GPUs out of service: the node goes for a re-burn-in"
    assert [x.code for x in s.node] == ["xid_fatal"]


def test_two_gpus_in_one_look_send_the_node():
    s = decide(POLICY, [xid(1), remap(2)], isolation="dra", expected_gpus=8)
    assert s.node_goes and s.why_node.startswith("2 GPUs out")


def test_a_repeat_offender_goes():
    s = decide(POLICY, [xid(6)], isolation="dra", expected_gpus=8, quarantines_in_window=2)
    assert s.node_goes and s.why_node == "a repeat offender: 3 GPU quarantines in 30 days"


def test_a_node_xid_on_one_gpu_is_the_nodes():
    s = decide(POLICY, [xid(2, 79)], isolation="dra", expected_gpus=8)
    assert s.node_goes and s.gpus == () and s.why_node == ""


def test_a_node_level_signal_takes_every_signal_with_the_node():
    psu = Signal("bmc_psu_lost", "critical", "PSU 2 lost", {})
    s = decide(POLICY, [xid(3), psu], isolation="dra", expected_gpus=8)
    assert s.node_goes and {x.code for x in s.node} == {"xid_fatal", "bmc_psu_lost"}


def test_a_signal_about_a_gpu_already_out_is_known_not_news():
    s = decide(POLICY, [remap(3)], isolation="dra", expected_gpus=8, out_already=[3], allocatable=7)
    assert not s.node_goes and s.gpus == () and [x.code for x in s.known] == ["row_remap_failure"]


def test_the_shortfall_the_quarantined_gpu_explains_is_no_signal():
    s = decide(POLICY, [xid(3), short(7)], isolation="device-plugin", expected_gpus=8, allocatable=7)
    assert not s.node_goes and [g.gpu for g in s.gpus] == [3]


def test_a_shortfall_beyond_the_quarantined_gpus_sends_the_node():
    s = decide(POLICY, [short(6)], isolation="dra", expected_gpus=8, out_already=[3], allocatable=6)
    assert s.node_goes and [x.code for x in s.node] == ["gpus_unallocatable"]


def test_the_device_plugin_still_handing_out_the_gpu_sends_the_node():
    s = decide(POLICY, [xid(3)], isolation="device-plugin", expected_gpus=8, allocatable=8)
    assert s.node_goes and "still advertises 8 GPUs" in s.why_node


@pytest.mark.parametrize("signal,why", [(remap(4), "is not an XID"), (xid(4, 43), "does not mark a GPU unhealthy for XID 43")])
def test_what_the_device_plugin_cannot_isolate_goes_with_the_node(signal, why):
    s = decide(POLICY, [signal], isolation="device-plugin", expected_gpus=8, allocatable=8)
    assert s.node_goes and why in s.why_node and s.not_isolated


def test_no_isolation_on_the_site_means_the_node():
    s = decide(POLICY, [xid(3)], isolation="none", expected_gpus=8)
    assert s.node_goes and "gpu_isolation none" in s.why_node


def test_warnings_and_quiet_looks_take_nothing_out():
    warn = Signal("xid_other", "warning", "GPU 1: XID 13", {"gpu": "1", "xid": 13})
    assert decide(POLICY, [warn], isolation="dra", expected_gpus=8) == decide(POLICY, [], isolation="dra",
                                                                              expected_gpus=8)
    assert not decide(POLICY, [warn], isolation="dra", expected_gpus=8).node_goes


def test_a_confined_code_without_a_readable_gpu_is_the_nodes():
    odd = Signal("xid_fatal", "critical", "GPU ?: XID 48", {"gpu": "00000000:1B:00.0", "xid": 48})
    assert decide(POLICY, [odd], isolation="dra", expected_gpus=8).node_goes


def test_quarantine_off_is_the_old_behaviour():
    off = POLICY.model_copy(update={"enabled": False})
    s = decide(off, [xid(3)], isolation="dra", expected_gpus=8)
    assert s.node_goes and "quarantine is off" in s.why_node


def test_healthy_count():
    assert GpuCount(8, (3,)).healthy == 7 and GpuCount(8, (3, 3)).healthy == 7 and GpuCount(1, (0, 1)).healthy == 0


def test_a_rule_on_an_unknown_fact_or_a_text_operator_is_refused(tmp_path):
    bad = tmp_path / "q.yaml"
    bad.write_text("confined: [xid_fatal]\ntaint: {xid_key: a/b, other_key: c/d}\n"
                   "node_goes:\n  - when: [{field: gpus_lost, op: above, value: 1}]\n    reason: x\n")
    with pytest.raises(ConfigError, match="gpus_lost"):
        load_policy(bad)
    bad.write_text("confined: [xid_fatal]\ntaint: {xid_key: a/b, other_key: c/d}\n"
                   "node_goes:\n  - when: [{field: gpus_out, op: matches, value: '1'}]\n    reason: x\n")
    with pytest.raises(ConfigError, match="for text"):
        load_policy(bad)


def test_on_a_shared_pool_the_device_plugin_isolates_no_single_gpu():
    s = decide(POLICY, [xid(3)], isolation="device-plugin", expected_gpus=8, allocatable=0, shared=True)
    assert s.node_goes and "shares its GPUs" in s.why_node
    # a DRA taint is on the GPU's device whatever the pool shares
    assert not decide(POLICY, [xid(3)], isolation="dra", expected_gpus=8, shared=True).node_goes


def test_a_shared_resources_shortfall_is_never_explained_by_one_gpu():
    mig_short = Signal("gpus_unallocatable", "critical", "the device plugin advertises 14 nvidia.com/mig-1g.18gb",
                       {"allocatable": 14, "expected": 16, "resource": "nvidia.com/mig-1g.18gb"})
    assert decide(POLICY, [xid(3), mig_short], isolation="dra", expected_gpus=8, shared=True).node_goes
