"""The lowest level of every Kueue Topology bringup renders is ``kubernetes.io/hostname``
(issue #27, item 6): with it, Kueue pins pods to nodes and can move a workload off a node
tainted NoExecute; with or without blocks."""

from __future__ import annotations

import pytest

from bringup.admission.kueue import LOWEST_LEVEL, PoolNode, render_pool


@pytest.mark.parametrize("block", ["", "hall-a"])
def test_every_topology_ends_at_the_hostname(block):
    topology, _flavor = render_pool("train", [PoolNode(name="n1", rack="r1", block=block),
                                              PoolNode(name="n2", rack="r2", block=block)])
    assert LOWEST_LEVEL == "kubernetes.io/hostname"
    assert topology["spec"]["levels"][-1] == {"nodeLabel": "kubernetes.io/hostname"}
