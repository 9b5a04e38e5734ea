"""``bringup lab status``: every path printed whole, however narrow the console (the lab
replaced by its status rows: no service is started or asked); ``bringup lab inject``: bad
input is one line and exit 2, checked before anything is written (the lab replaced by its
fleet and a home in tmp)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console
from typer.testing import CliRunner

from bringup.sku import load_skus, nic_counts
from bringup_cli import app, main
from bringup_cli import lab as lab_cmd
from lab.fleet import FaultKind, loads_fleet
from lab.gpu import profile as gpu_profile
from lab.nodes.sshd import NodeDir

LONG = "/home/operator/.local/share/bringup-lab/with/a/rather/deep/folder/secrets/postgres-password"


class FakeLab:
    def __init__(self, rows):
        self.rows = rows

    def status(self):
        return self.rows


def status(monkeypatch, rows, width=40):
    out = io.StringIO()
    monkeypatch.setattr(lab_cmd, "console", Console(file=out, width=width, force_terminal=False, color_system=None))
    monkeypatch.setattr(lab_cmd, "_lab", lambda *a, **k: FakeLab(rows))
    result = CliRunner().invoke(app, ["lab", "status"])
    return result, out.getvalue()


ROWS = [
    {"service": "postgresql", "up": True, "url": "postgresql://bringup@127.0.0.1:5433/bringup", "credentials": LONG},
    {"service": "netbox", "up": True, "url": "http://127.0.0.1:8000",
     "credentials": f"user admin: {LONG}-admin; API token: {LONG}-token"},
    {"service": "redis", "up": True, "url": "redis://127.0.0.1:6380", "credentials": "-"},
    {"service": "bmcsim", "up": None, "url": "-", "credentials": "not built yet"},
]


def test_long_paths_are_printed_whole_in_a_narrow_console(monkeypatch):
    result, text = status(monkeypatch, ROWS, width=40)
    assert result.exit_code == 0, result.output
    lines = text.splitlines()
    assert f"  postgresql: {LONG}" in lines  # on one line, not cut with "…" nor folded
    assert f"  netbox: user admin: {LONG}-admin; API token: {LONG}-token" in lines
    assert "…" not in text
    assert not [line for line in lines if line.startswith(("  redis:", "  bmcsim:"))]


def test_a_service_not_built_says_so_in_its_state(monkeypatch):
    _, text = status(monkeypatch, ROWS, width=120)
    [bmcsim] = [line for line in text.splitlines() if "bmcsim" in line]
    assert "n/a (not built yet)" in bmcsim  # a reason, not listed as where credentials are


def test_a_service_down_is_exit_1(monkeypatch):
    result, text = status(monkeypatch, [{**ROWS[0], "up": False}], width=120)
    assert result.exit_code == 1 and "down" in text


# --- bringup lab inject: bad input is one line and exit 2 (issue #24) -------------------------
FLEET = """
site: t
pools: {p: {}}
nodes:
  - {name: n1, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.0.0.9, address: 127.0.0.8}
"""


class InjectLab:
    """The lab as ``inject`` sees it: a fleet of one HGX H100 node (8 GPUs), a home in tmp."""

    fleet_path = Path("fleets/test.yaml")

    def __init__(self, home: Path) -> None:
        self.paths = SimpleNamespace(home=home)

    def fleet(self):
        return loads_fleet(FLEET, nic_counts(load_skus()))


def inject(monkeypatch, capsys, home: Path, *args: str, installed: bool = True):
    """Run ``bringup lab inject ARGS`` as the console script does (``main``: what a user sees)."""
    if installed:
        nd = NodeDir(home, "n1")
        nd.dir.mkdir(parents=True, exist_ok=True)
        nd.state.write_text(json.dumps({"installed": True, "versions": {}}))
    monkeypatch.setenv("BRINGUP_CONFIG", str(home / "settings.yaml"))   # no lab default looked up
    monkeypatch.setattr(lab_cmd, "_lab", lambda *a, **k: InjectLab(home))
    # the node's profile names the NVML stand-in's folder; building it runs gcc (`lab prepare`'s)
    monkeypatch.setattr(gpu_profile, "build_nvml", lambda out_dir: home / "build" / "nvml")
    monkeypatch.setattr(sys, "argv", ["bringup", "lab", "inject", *args])
    with pytest.raises(SystemExit) as done:
        main()
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


def one_line(err: str) -> str:
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


@pytest.mark.parametrize("installed", [True, False])      # a lab that is not up says the same
def test_an_unknown_fault_is_one_line_listing_the_faults(monkeypatch, capsys, tmp_path, installed):
    code, _, err = inject(monkeypatch, capsys, tmp_path, "n1", "gpu_on_fire", installed=installed)
    assert code == 2 and "unknown fault 'gpu_on_fire'" in one_line(err)
    assert all(kind.value in err for kind in FaultKind)
    assert not (tmp_path / "nodes" / "n1" / "injected.json").exists()


@pytest.mark.parametrize("kind,value", [("xid", "abc"), ("ecc_uncorrectable", "many"), ("low_busbw", "nan"),
                                        ("slow_node", "-5")])
def test_a_value_that_is_not_a_number_is_one_line(monkeypatch, capsys, tmp_path, kind, value):
    code, _, err = inject(monkeypatch, capsys, tmp_path, "n1", kind, "--value", value, "--gpu", "1")
    assert code == 2 and f"fault {kind}: --value must be a number >= 0, not {value!r}" in one_line(err)
    assert not (tmp_path / "nodes" / "n1" / "injected.json").exists()


@pytest.mark.parametrize("gpu", ["8", "12", "99", "-1"])
def test_a_gpu_the_sku_does_not_have_is_one_line_with_the_range(monkeypatch, capsys, tmp_path, gpu):
    code, _, err = inject(monkeypatch, capsys, tmp_path, "n1", "xid", "--value", "79", "--gpu", gpu,
                          installed=False)
    assert code == 2 and f"fault xid: no GPU {gpu} on a hgx-h100-80gb (give --gpu 0..7)" in one_line(err)


def test_a_nic_the_sku_does_not_have_is_one_line(monkeypatch, capsys, tmp_path):
    code, _, err = inject(monkeypatch, capsys, tmp_path, "n1", "flapping_port", "--iface", "cx9")
    assert code == 2 and "no NIC 'cx9' on a hgx-h100-80gb (name it cx0..cx7" in one_line(err)
    assert not (tmp_path / "nodes" / "n1" / "root").exists()          # nothing rewritten first


def test_an_unknown_node_is_one_line(monkeypatch, capsys, tmp_path):
    code, _, err = inject(monkeypatch, capsys, tmp_path, "n9", "xid")
    assert code == 2 and "no node n9 in the lab's fleet" in one_line(err)


def test_a_good_fault_is_injected_with_its_value_typed(monkeypatch, capsys, tmp_path):
    code, out, err = inject(monkeypatch, capsys, tmp_path, "n1", "xid", "--value", "79", "--gpu", "7")
    assert code == 0 and err == "" and "n1: xid injected" in out
    code, out, _ = inject(monkeypatch, capsys, tmp_path, "n1", "driver_drift", "--value", "570.10")
    assert code == 0
    kept = json.loads((tmp_path / "nodes" / "n1" / "injected.json").read_text())
    assert [(f["kind"], f.get("gpu"), f["value"]) for f in kept] == [("xid", 7, 79), ("driver_drift", None, "570.10")]
