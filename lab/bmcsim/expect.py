"""What NetBox would say about each node of a fleet profile, without NetBox.

The benchmark and the tests verify discovery against this; in production the
:class:`~bringup.discovery.verify.ExpectedNode` comes from NetBox records instead.
"""

from __future__ import annotations

from bringup.discovery.verify import ExpectedNode
from bringup.sku import SkuSpec
from lab.fleet import FleetProfile


def expected_nodes(fleet: FleetProfile, skus: dict[str, SkuSpec]) -> list[ExpectedNode]:
    out = []
    for n in fleet.nodes:
        sku = skus[n.sku]
        out.append(ExpectedNode(name=n.name, sku=sku, bmc_address=n.bmc_address, bmc_port=n.bmc_port,
                                serial=n.serial,
                                macs={i: n.mac_of(i) for i in n.interface_names(sku.nics.compute)}))
    return out
