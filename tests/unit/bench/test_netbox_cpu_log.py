"""bench/netbox_cpu_log.py: the lab NetBox's per-request CPU lines summed by endpoint,
ids folded, lines that are not requests skipped and said."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_scripts import load, unload

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "netbox_cpu_log.py"

#: lines as the lab's WSGI entry point writes them (lab/netbox_server.py, WSGI)
LINES = """\
1796652485.856 56.3 105.8 netbox_flow8_gw0 POST /graphql/ -
1796652486.001 350.0 900.0 netbox_flow8_gw0 PATCH /api/dcim/devices/4/ fields=id%2Ccustom_fields
1796652486.101 250.0 300.0 netbox_flow8_gw0 PATCH /api/dcim/devices/10/ fields=id%2Ccustom_fields
1796652486.201 160.0 170.0 netbox_watch_gw1 PATCH /api/dcim/devices/ -
1796652486.3
"""


@pytest.fixture(scope="module")
def cpu_log():
    yield load("netbox_cpu_log")
    unload("netbox_cpu_log")


def test_requests_are_summed_by_endpoint_with_ids_folded(cpu_log, tmp_path, capsys):
    log = tmp_path / "nb.log"
    log.write_text(LINES)
    assert cpu_log.main([str(log)]) == 0
    out, err = capsys.readouterr()
    rows = out.splitlines()
    assert "0.6        2    300.0  PATCH /api/dcim/devices/{id}/" in rows[1]   # biggest first
    assert rows[-1] == "netbox_cpu_log: requests 4 cpu_s 0.8"
    assert "1 lines that are not requests skipped" in err


def test_one_database_alone(cpu_log, tmp_path, capsys):
    log = tmp_path / "nb.log"
    log.write_text(LINES)
    cpu_log.main([str(log), "--db", "netbox_watch_gw1"])
    assert capsys.readouterr().out.splitlines()[-1] == "netbox_cpu_log: requests 1 cpu_s 0.2"


def test_the_lab_writes_the_fields_in_the_order_read(cpu_log):
    """The WSGI entry point's format and this parser agree on the fields."""
    from lab.netbox_server import WSGI
    assert '"%.3f %.1f %.1f %s %s %s %s\\n"' in WSGI
    r = cpu_log.parse(LINES.splitlines()[1])
    assert (r.cpu_ms, r.wall_ms, r.db, r.method, r.endpoint) == (
        350.0, 900.0, "netbox_flow8_gw0", "PATCH", "/api/dcim/devices/{id}/")
