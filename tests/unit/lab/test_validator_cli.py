"""lab.bmcsim.validator_cli: the validator's own entry point with its Excel report off."""

from __future__ import annotations

import pytest
from redfish_service_validator import console_scripts, report

from lab.bmcsim import validator_cli


def test_the_validator_runs_with_its_excel_report_replaced(monkeypatch):
    seen = {}
    monkeypatch.setattr(report, "xlsx_report", report.xlsx_report)      # restored after the test

    def fake_main():
        seen["xlsx"] = report.xlsx_report(None, "dir", "time", "1.0")
        return 0

    monkeypatch.setattr(console_scripts, "main", fake_main)
    assert validator_cli.main() == 0
    assert seen["xlsx"] == validator_cli.NOT_WRITTEN


def test_a_validator_without_the_function_is_refused(monkeypatch, capsys):
    monkeypatch.delattr(report, "xlsx_report")
    monkeypatch.setattr(console_scripts, "main", lambda: pytest.fail("ran with its Excel report"))
    assert validator_cli.main() == 2
    assert "xlsx_report is gone" in capsys.readouterr().err
