"""``bringup lab clear NODE [FAULT]`` (issue #27, item 5): the inverse of ``lab inject``, as a
repair: the injected fault is gone from the node's simulated hardware and its record; an
unknown node or fault, or one the node was not given, is one line and exit 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bringup.sku import load_skus, nic_counts
from bringup_cli import lab as lab_cmd
from bringup_cli import main
from lab.fleet import loads_fleet
from lab.gpu import profile as gpu_profile
from lab.nodes.sshd import NodeDir

FLEET = """
site: t
pools: {p: {}}
nodes:
  - {name: n1, rack: r1, sku: hgx-h100-80gb, pool: p, bmc_address: 127.0.0.9, address: 127.0.0.8}
"""


class Lab:
    fleet_path = Path("fleets/test.yaml")

    def __init__(self, home: Path) -> None:
        self.paths = SimpleNamespace(home=home)

    def fleet(self):
        return loads_fleet(FLEET, nic_counts(load_skus()))


def cli(monkeypatch, capsys, home: Path, *args: str):
    nd = NodeDir(home, "n1")
    if not nd.state.exists():
        nd.dir.mkdir(parents=True, exist_ok=True)
        nd.state.write_text(json.dumps({"installed": True, "versions": {}}))
    monkeypatch.setenv("BRINGUP_CONFIG", str(home / "settings.yaml"))
    monkeypatch.setattr(lab_cmd, "_lab", lambda *a, **k: Lab(home))
    # the node's profile names the NVML stand-in's folder; building it runs gcc (a process),
    # which `lab prepare` does, not a unit test: a unit run on a fresh machine failed here
    monkeypatch.setattr(gpu_profile, "build_nvml", lambda out_dir: home / "build" / "nvml")
    monkeypatch.setattr(sys, "argv", ["bringup", "lab", *args])
    with pytest.raises(SystemExit) as done:
        main()
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


def kinds(home: Path) -> list[str]:
    return [f["kind"] for f in json.loads((home / "nodes" / "n1" / "injected.json").read_text())]


def test_clear_takes_one_injected_fault_away_and_keeps_the_others(monkeypatch, capsys, tmp_path):
    assert cli(monkeypatch, capsys, tmp_path, "inject", "n1", "xid", "--value", "79", "--gpu", "2")[0] == 0
    assert cli(monkeypatch, capsys, tmp_path, "inject", "n1", "driver_drift", "--value", "570.10")[0] == 0
    profile = tmp_path / "nodes" / "n1" / "root" / "var/lib/bringup-lab/node.json"   # what the stand-ins read

    def xids() -> list[str]:
        return [line for line in json.loads(profile.read_text())["kernel_log"] if "Xid" in line]
    assert xids()
    code, out, err = cli(monkeypatch, capsys, tmp_path, "clear", "n1", "xid")
    assert code == 0 and err == "" and "n1: cleared xid" in out and kinds(tmp_path) == ["driver_drift"]
    assert xids() == []
    code, out, _ = cli(monkeypatch, capsys, tmp_path, "clear", "n1")
    assert code == 0 and kinds(tmp_path) == [] and "injected faults now: none" in out


@pytest.mark.parametrize("args,says", [(("n9",), "no node n9 in the lab's fleet"),
                                       (("n1", "gpu_on_fire"), "unknown fault 'gpu_on_fire'"),
                                       (("n1", "xid"), "node n1 has no injected fault xid (injected: none)")])
def test_a_node_or_fault_clear_cannot_take_away_is_one_line(monkeypatch, capsys, tmp_path, args, says):
    code, _, err = cli(monkeypatch, capsys, tmp_path, "clear", *args)
    assert code == 2 and len(err.splitlines()) == 1 and says in err, err
