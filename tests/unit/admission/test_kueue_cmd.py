"""``bringup kueue render``: NetBox replaced by fakes; the manifests printed or written."""

from __future__ import annotations

from types import SimpleNamespace as NS

import yaml
from typer.testing import CliRunner

from bringup.admission.kueue import PoolNode
from bringup.netbox.adapter import NetBox
from bringup_cli import app, common, kueue_cmd

NODES = [PoolNode(name="gpu-01", rack="r1", block="su1"), PoolNode(name="gpu-02", rack="r2", block="su1")]


def invoke(monkeypatch, nodes, *args):
    seen = {}

    def pool_nodes(config, pool):
        seen["pool"] = pool
        return nodes
    monkeypatch.setattr(kueue_cmd, "_pool_nodes", pool_nodes)
    return CliRunner().invoke(app, ["kueue", "render", *args], env={"COLUMNS": "200"}), seen


def test_render_prints_both_documents(monkeypatch):
    result, seen = invoke(monkeypatch, NODES, "--pool", "train")
    assert result.exit_code == 0, result.output
    assert seen == {"pool": "train"}
    topology, flavor = yaml.safe_load_all(result.output)
    assert topology["kind"] == "Topology" and flavor["spec"]["topologyName"] == "train-topology"
    assert "2 nodes in 2 racks (r1, r2)" in result.output


def test_render_writes_the_file(monkeypatch, tmp_path):
    result, _ = invoke(monkeypatch, NODES, "--pool", "train", "--out", str(tmp_path / "k"))
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all((tmp_path / "k" / "train.yaml").read_text()))
    assert [d["kind"] for d in docs] == ["Topology", "ResourceFlavor"]
    assert "bringup.io/block > bringup.io/rack > kubernetes.io/hostname" in result.output


def test_empty_pool_is_an_error_not_an_empty_file(monkeypatch, tmp_path):
    result, _ = invoke(monkeypatch, [], "--pool", "nobody", "--out", str(tmp_path))
    assert result.exit_code != 0
    assert isinstance(result.exception, Exception) and "has no nodes" in str(result.exception)
    assert not list(tmp_path.iterdir())


class FakeApi:
    """Just enough of pynetbox for NetBox.nodes(tag=...) and rack_locations()."""

    def __init__(self):
        racks = [NS(name="r1", site=NS(slug="lab"), location=NS(slug="su1")),
                 NS(name="r2", site=NS(slug="lab"), location=None)]
        self.filters = []
        self.dcim = NS(racks=NS(filter=lambda **kw: self.filters.append(("racks", kw)) or racks, all=lambda: racks),
                       devices=NS(filter=lambda **kw: self.filters.append(("devices", kw)) or []),
                       interfaces=NS(filter=lambda **kw: []))


def test_pool_nodes_reads_the_tag_and_rack_locations(monkeypatch):
    api = FakeApi()
    nb = NetBox(api)
    assert nb.rack_locations("lab") == {("lab", "r1"): "su1", ("lab", "r2"): ""}
    recs = [NS(name="gpu-01", site="lab", rack="r1"), NS(name="gpu-02", site="lab", rack="r2")]
    monkeypatch.setattr(nb, "nodes", lambda **kw: api.filters.append(("nodes", kw)) or recs)
    monkeypatch.setattr(common, "settings", lambda config: None)
    monkeypatch.setattr(common, "netbox", lambda s: nb)
    nodes = kueue_cmd._pool_nodes(None, "train")
    assert ("nodes", {"tag": "pool-train"}) in api.filters
    assert nodes == [PoolNode(name="gpu-01", rack="r1", block="su1"), PoolNode(name="gpu-02", rack="r2", block="")]
