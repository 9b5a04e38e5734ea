"""The acceptance job's phase lines: bringup's format, and real training programs' lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.workload.phases import format_line, parse_log

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "workload"


def test_our_lines_in_a_log_with_other_output():
    log = parse_log("starting\n"
                    "[rank1]: bringup-accept phase=data seconds=1.5 bytes=1024\n"
                    "bringup-accept phase=train step=10 samples_per_s=812.5 loss=0.25 mfu=0.41\n"
                    "bringup-accept phase=checkpoint step=10 seconds=0.1 bytes=99 path=/ckpt/a.npz\n")
    assert [p.name for p in log.phases] == ["data", "train", "checkpoint"]
    assert log.last("data").figures == {"seconds": 1.5, "bytes": 1024}
    assert log.last("train").figures["mfu"] == 0.41
    assert log.last("checkpoint").text == {"path": "/ckpt/a.npz"}
    assert log.findings == []


@pytest.mark.parametrize("line, says", [
    ("bringup-accept phase=data bytes=10", "no seconds"),
    ("bringup-accept phase=data seconds=fast", "seconds='fast' is not a number"),
    ("bringup-accept phase=comm busbw_gbps=nan", "not a number"),
    ("bringup-accept phase=warmup seconds=1", "unknown phase 'warmup'"),
    ("bringup-accept seconds=1", "unknown phase ''"),
])
def test_an_unreadable_line_is_a_finding_never_a_figure(line, says):
    log = parse_log(f"bringup-accept phase=data seconds=1 bytes=2\n{line}\n")
    assert len(log.phases) == 1 and log.phases[0].line == 1
    assert len(log.findings) == 1 and says in log.findings[0] and "line 2" in log.findings[0]


def test_a_failed_phase_carries_its_reason_instead_of_figures():
    log = parse_log('bringup-accept phase=restore status=failed reason="checkpoint rank-1.npz unreadable: x"')
    p = log.last("restore")
    assert p.text == {"status": "failed", "reason": "checkpoint rank-1.npz unreadable: x"} and p.figures == {}
    assert log.findings == []


def test_format_line_reads_back():
    line = format_line("restore", step=40, seconds=0.125, reason="two words")
    assert parse_log(line).last("restore").figures == {"step": 40, "seconds": 0.125}
    assert parse_log(line).last("restore").text == {"reason": "two words"}


def test_megatron_iteration_lines_give_samples_per_second():
    log = parse_log((FIXTURES / "megatron-iteration.log").read_text())
    train = log.all("train")
    assert len(train) == 3 and log.findings == []
    first = train[0].figures
    assert first["step"] == 43 and first["tflops"] == 239.8
    assert first["samples_per_s"] == pytest.approx(128 / 5.4449)   # global batch / iteration time
    assert first["loss"] == pytest.approx(1.825991)


def test_torchtitan_step_lines_give_tokens_per_second_and_mfu():
    log = parse_log((FIXTURES / "torchtitan-step.log").read_text())
    train = log.all("train")
    assert [p.figures["step"] for p in train] == [14, 15, 4]
    assert train[2].figures["tokens_per_s"] == 10050 and train[2].figures["mfu"] == pytest.approx(0.1399)
    assert "samples_per_s" not in train[0].figures     # tokens are not samples


def test_a_cut_megatron_line_is_a_finding():
    log = parse_log(" iteration 5/ 10 | elapsed time per iteration (ms): 12.0 |")
    assert log.phases == [] and "Megatron-LM" in log.findings[0]
