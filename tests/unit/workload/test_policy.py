"""The pool acceptance policy (YAML) and the verdict on one run's observation."""

from __future__ import annotations

import pytest

from bringup.errors import ConfigError
from bringup.workload.phases import parse_log
from bringup.workload.policy import AcceptancePolicy, Observation, WorkerLog, judge, load_policy

POLICY = AcceptancePolicy(reference_samples_per_s=1000, min_throughput_ratio=0.9, max_queue_wait_s=60,
                          max_data_s=10, max_restore_s=30)


def worker(index, *, data=1.0, samples=600.0, done=True, extra="", pod=None, replaced=False):
    text = (f"bringup-accept phase=data seconds={data} bytes=100\n"
            "bringup-accept phase=weights seconds=0.5 bytes=10\n"
            "bringup-accept phase=comm busbw_gbps=2.5\n"
            f"bringup-accept phase=train step=5 samples_per_s={samples} loss=1.0\n"
            f"bringup-accept phase=train step=10 samples_per_s={samples} loss=0.5\n"
            "bringup-accept phase=checkpoint step=10 seconds=0.1\n" + extra
            + ("bringup-accept phase=done steps=20 loss_first=9.0 loss_last=0.1\n" if done else ""))
    return WorkerLog(pod=pod or f"p{index}", node=f"n{index}", index=index, replaced=replaced, log=parse_log(text))


def good(**kw):
    base = {"pool": "train", "admitted": True, "queue_wait_s": 3.0, "checkpoint_step": 10, "restore_s": 4.0,
                "restored_step": 10, "finished": "succeeded", "deleted_pod": "p1-old",
                "workers": [worker(0), worker(1, done=False, pod="p1-old", replaced=True),
                         worker(1, extra="bringup-accept phase=restore step=10 seconds=0.2\n")]}
    base.update(kw)
    return Observation(**base)


def test_a_good_run_passes_with_its_figures():
    v = judge(good(), POLICY)
    assert v.outcome == "pass", v.summary()
    assert v.figures["samples_per_s"] == 1200 and v.figures["throughput_ratio"] == pytest.approx(1.2)
    assert v.figures["data_fetch_s"] == 1.5 and v.figures["restore_s"] == 4.0
    assert v.nodes == ["n0", "n1"]


@pytest.mark.parametrize("change, says", [
    ({"admitted": False, "queue_wait_s": None, "workers": []}, "never admitted"),
    ({"queue_wait_s": 61.0}, "queue wait 61.0 s > limit 60"),
    ({"restore_s": 31.0}, "restore took 31.0 s > limit 30"),
    ({"restored_step": 0}, "resumed at step 0, before the checkpoint's 10"),
    ({"finished": "failed", "notes": ["BackoffLimitExceeded"]}, "did not succeed (failed): BackoffLimitExceeded"),
    ({"workers": [worker(0, data=12.0), worker(1)]}, "data fetch 12.5 s > limit 10"),
    ({"workers": [worker(0, samples=100), worker(1, samples=100)]}, "is 20% of the reference"),
    ({"workers": [worker(0, extra='bringup-accept phase=restore status=failed reason="bad zip"\n'), worker(1)]},
     "phase restore failed: bad zip"),
])
def test_each_broken_limit_fails_with_its_reason(change, says):
    v = judge(good(**change), POLICY)
    assert v.outcome == "fail"
    assert any(says in r for r in v.reasons), v.reasons


@pytest.mark.parametrize("change, policy, says", [
    ({"restore_s": None, "restored_step": None}, POLICY, "restore"),
    ({"checkpoint_step": None}, POLICY, "checkpoint"),
    ({"workers": [worker(0), worker(1, done=False)]}, POLICY, "never reported done"),
    ({}, POLICY.model_copy(update={"reference_samples_per_s": 0}), "no reference_samples_per_s"),
    ({"workers": [worker(0), WorkerLog(pod="p1", index=1, log=parse_log("bringup-accept phase=data x=1"))]},
     POLICY, "pod p1: line 1"),
])
def test_a_missing_or_unreadable_figure_is_unknown_never_a_pass(change, policy, says):
    v = judge(good(**change), policy)
    assert v.outcome == "unknown" and not v.passed
    assert any(says in u for u in v.unknown), v.unknown


def test_loss_that_does_not_go_down_fails():
    w = WorkerLog(pod="p0", index=0, log=parse_log(
        "bringup-accept phase=data seconds=1 bytes=1\nbringup-accept phase=weights seconds=1\n"
        "bringup-accept phase=comm busbw_gbps=1\nbringup-accept phase=train samples_per_s=2000\n"
        "bringup-accept phase=done loss_first=1.0 loss_last=1.5\n"))
    v = judge(good(workers=[w]), POLICY)
    assert v.outcome == "fail" and any("loss did not go down" in r for r in v.reasons)


def test_the_repo_policy_loads_and_a_pool_section_overrides_it():
    base = load_policy()
    assert base.reference_samples_per_s == 0 and base.image_role == "training"
    mine = load_policy({"reference_samples_per_s": 5000, "env": {"NCCL_DEBUG": "INFO"}})
    assert mine.reference_samples_per_s == 5000 and mine.env == {"NCCL_DEBUG": "INFO"}
    assert mine.max_restore_s == base.max_restore_s


@pytest.mark.parametrize("section, says", [
    ({"max_restore_s": -1}, "bringup_pool.acceptance.max_restore_s"),
    ({"restore_limit": 5}, "bringup_pool.acceptance.restore_limit"),
    ("fast", "must be a mapping"),
])
def test_a_bad_pool_section_is_one_line_naming_its_key(section, says):
    with pytest.raises(ConfigError, match=says.replace(".", r"\.")):
        load_policy(section)


def test_a_bad_policy_file_names_its_line(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("defaults:\n  max_data_s: soon\n")
    with pytest.raises(ConfigError, match="max_data_s"):
        load_policy(path=p)
