"""`lab prepare` / `lab up` say each step as it starts and how long it took: plain lines
when the output is not a terminal (a CI log), a line per finished step on a terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from typer.testing import CliRunner

from bringup_cli import app
from bringup_cli import lab as lab_cmd
from lab.steps import PlainLines, Steps


def clock(*ticks):
    it = iter(ticks)
    return lambda: next(it)


def test_plain_lines_say_each_step_as_it_starts_and_its_time_as_it_ends():
    lines: list[str] = []
    steps = Steps(PlainLines(lines.append), clock=clock(0.0, 1.25, 1.25, 13.6))
    steps.run("postgresql", lambda: None)
    steps.run("netbox pristine db", lambda: steps.report.note("restoring the dump"))
    assert lines == ["lab: postgresql ...", "lab: postgresql ... done in 1.2 s",
                     "lab: netbox pristine db ...", "lab:   restoring the dump",
                     "lab: netbox pristine db ... done in 12.3 s"]
    assert steps.timings == {"postgresql": 1.25, "netbox pristine db": pytest.approx(12.35)}


def test_a_failing_step_is_said_with_its_time_and_the_error_goes_on():
    lines: list[str] = []
    steps = Steps(PlainLines(lines.append), clock=clock(0.0, 2.0))

    def boom():
        raise RuntimeError("migrate failed")

    with pytest.raises(RuntimeError):
        steps.run("netbox pristine db", boom)
    assert lines[-1] == "lab: netbox pristine db ... FAILED after 2.0 s" and steps.timings == {}


class FakeLab:
    def prepare(self, report):
        steps = Steps(report, clock=clock(0.0, 0.5, 0.5, 4.0))
        steps.run("postgresql", lambda: None)
        steps.run("netbox pristine db", lambda: report.note("restoring NetBox 4.7.3's migrated schema"))
        return steps.timings


def prepare(monkeypatch, terminal: bool) -> tuple[int, str]:
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=terminal, color_system=None)
    monkeypatch.setattr(lab_cmd, "console", console)
    monkeypatch.setattr(lab_cmd, "_lab", lambda *a, **k: FakeLab())
    result = CliRunner().invoke(app, ["lab", "prepare"])
    return result.exit_code, out.getvalue()


def test_lab_prepare_outside_a_terminal_prints_plain_step_lines(monkeypatch):
    code, text = prepare(monkeypatch, terminal=False)
    assert code == 0, text
    lines = text.splitlines()
    assert lines[:5] == ["lab: postgresql ...", "lab: postgresql ... done in 0.5 s", "lab: netbox pristine db ...",
                         "lab:   restoring NetBox 4.7.3's migrated schema", "lab: netbox pristine db ... done in 3.5 s"]
    assert lines[-1].startswith("lab prepared in ") and "netbox pristine db 3.5s" in lines[-1]


def test_lab_prepare_on_a_terminal_prints_a_line_per_finished_step(monkeypatch):
    code, text = prepare(monkeypatch, terminal=True)
    assert code == 0, text
    assert "✓ postgresql 0.5 s" in text and "✓ netbox pristine db 3.5 s" in text
    assert "restoring NetBox 4.7.3's migrated schema" in text
