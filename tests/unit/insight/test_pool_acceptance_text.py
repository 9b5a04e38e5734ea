"""The main job's printout of each pool's acceptance (bringup.insight.run_summary)."""

from __future__ import annotations

from bringup.insight.run_summary import pool_acceptance_text


def test_each_pool_shows_its_outcome_figures_and_reasons():
    passed = {"outcome": "pass", "run": "accept-train-20261206", "nodes": ["n1", "n2"], "reasons": [],
              "unknown": [], "figures": {"queue_wait_s": 1.5, "samples_per_s": 24133.2, "throughput_ratio": 2.01,
                                         "restore_s": 2.25}}
    failed = {"outcome": "fail", "run": "r2", "nodes": ["n3"], "figures": {"samples_per_s": None},
              "reasons": ["checkpoint rank-1.npz unreadable"], "unknown": ["training throughput vs reference"]}
    text = pool_acceptance_text([("train", passed), ("infer", failed), ("batch", None)])
    lines = text.splitlines()
    assert lines[0].startswith("Pool acceptance")
    assert [ln.split(":")[0].strip() for ln in lines if ln.startswith("  ") and not ln.startswith("    ")] == [
        "batch", "infer", "train"]
    assert "train: PASS  run accept-train-20261206  on n1, n2" in text
    assert "samples_per_s            24,133 samples/s" in text and "throughput_ratio         201.0%" in text
    assert "reason: checkpoint rank-1.npz unreadable" in text and "samples_per_s            unknown" in text
    assert "unknown: training throughput vs reference" in text
    assert "batch: not run" in text
    # the run's order, whatever the document's: queue first, restore last
    only = pool_acceptance_text([("train", passed)]).splitlines()
    shown = [ln.split()[0] for ln in only if ln.startswith("    ")]
    assert shown[:4] == ["queue_wait_s", "samples_per_s", "throughput_ratio", "restore_s"]
