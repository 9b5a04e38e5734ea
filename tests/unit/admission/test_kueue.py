"""Kueue Topology and ResourceFlavor rendering (bringup.admission.kueue)."""

from __future__ import annotations

import pytest
import yaml

from bringup.admission.kueue import PoolNode, render_pool, to_yaml
from bringup.errors import ConfigError

NODES = [PoolNode(name=f"gpu-{r}-{i}", rack=f"r{r}", block="su1" if r < 3 else "su2")
         for r in (1, 2, 3) for i in (1, 2)]


def test_documents_parse_back_with_the_expected_fields():
    text = to_yaml(render_pool("train-h100", NODES), header="pool train-h100\nsecond line")
    assert text.startswith("# pool train-h100\n# second line\n---\n")
    topology, flavor = yaml.safe_load_all(text)
    assert topology["apiVersion"] == "kueue.x-k8s.io/v1alpha1" and topology["kind"] == "Topology"
    assert topology["metadata"]["name"] == "train-h100-topology"
    assert topology["spec"]["levels"] == [{"nodeLabel": "bringup.io/block"}, {"nodeLabel": "bringup.io/rack"},
                                          {"nodeLabel": "kubernetes.io/hostname"}]
    assert flavor["apiVersion"] == "kueue.x-k8s.io/v1beta1" and flavor["kind"] == "ResourceFlavor"
    assert flavor["metadata"]["name"] == "train-h100"
    assert flavor["spec"] == {"nodeLabels": {"bringup.io/pool": "train-h100"}, "topologyName": "train-h100-topology"}
    assert flavor["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "bringup"


def test_without_blocks_the_levels_are_rack_and_hostname():
    nodes = [PoolNode(name="a", rack="r1"), PoolNode(name="b", rack="r2")]
    [topology, _] = render_pool("p", nodes)
    assert [lv["nodeLabel"] for lv in topology["spec"]["levels"]] == ["bringup.io/rack", "kubernetes.io/hostname"]


def test_a_pool_with_no_nodes_is_a_clear_error():
    with pytest.raises(ConfigError, match="pool 'empty' has no nodes in NetBox") as exc:
        render_pool("empty", [])
    assert "pool-empty" in str(exc.value)


@pytest.mark.parametrize("nodes, message", [
    ([PoolNode(name="a", rack="r1", block="su1"), PoolNode(name="b", rack="r2")], "nodes without a block .*: b"),
    ([PoolNode(name="a", rack="")], "node a: no rack in NetBox"),
    ([PoolNode(name="a", rack="rack 1")], "node a: rack 'rack 1' must consist"),
])
def test_nodes_that_cannot_be_placed_are_named(nodes, message):
    with pytest.raises(ConfigError, match=message):
        render_pool("p", nodes)


@pytest.mark.parametrize("pool", ["Train", "a_b", "a.b", "", "-x"])
def test_pool_name_must_fit_object_names(pool):
    with pytest.raises(ConfigError, match="pool name"):
        render_pool(pool, NODES)
