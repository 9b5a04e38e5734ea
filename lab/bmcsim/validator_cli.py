"""DMTF's Redfish Service Validator, run as its own command does, less its Excel report.

The validator (PyPI ``redfish-service-validator`` 2.x) writes two reports on every run: an
HTML one and an XLSX copy of it built cell by cell with openpyxl styles. The XLSX copy was
most of a run's CPU (cProfile of one run against the ``board-serial-tray`` profile: 62 of 74 s in
``report.xlsx_report``, 10 s validating; docs/benchmarks.md), the suite runs the validator once per vendor
profile on 2 cores (issue #23), and nothing here reads that file: ``check.run_validator``
judges the console summary and points at the HTML report. The validation, its summary and
the HTML report are the validator's own, untouched.

    python -m lab.bmcsim.validator_cli --config FILE --rhost URL ...   # its own arguments
"""

from __future__ import annotations

import sys

NOT_WRITTEN = "(not written: the lab's check reads the summary and the HTML report)"


def _no_xlsx(*_args, **_kwargs) -> str:
    return NOT_WRITTEN


def main() -> int:
    from redfish_service_validator import console_scripts, report

    if not callable(getattr(report, "xlsx_report", None)):
        # a validator that renamed it: say so rather than run with its Excel report back on
        print("lab.bmcsim.validator_cli: redfish_service_validator.report.xlsx_report is gone; "
              "update lab/bmcsim/validator_cli.py for this validator version", file=sys.stderr)
        return 2
    report.xlsx_report = _no_xlsx
    return console_scripts.main()


if __name__ == "__main__":
    sys.exit(main())
