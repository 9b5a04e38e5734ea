"""Kueue topology-aware scheduling manifests for a node pool (issue #14, item 3).

Kueue reads where a node sits from node labels named in a ``Topology`` object (levels from
the widest to the node itself), and a ``ResourceFlavor`` selects the pool's nodes and points
at that topology with ``spec.topologyName``. Schema as documented at
https://kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/ (the Topology API is
``kueue.x-k8s.io/v1alpha1``, ResourceFlavor ``kueue.x-k8s.io/v1beta1``; see also
https://kueue.sigs.k8s.io/docs/tasks/run/topology_aware_scheduling/).

The levels are bringup's own labels (:mod:`bringup.admission.labels`): block (the rack's NetBox
location) when every node of the pool has one, rack, and ``kubernetes.io/hostname`` last so
Kueue can place pods on single nodes. The hostname level is also what lets Kueue move a
workload off a failed node: TAS pins pods with a ``kubernetes.io/hostname`` selector only
when that label is a level of the topology, and replaces a node for an untolerated taint,
evicting running pods only for ``NoExecute`` (a cordon never evicts). bringup's health
policy picks the effect per finding class (``taint_effects`` in
``bringup/data/healthwatch.yaml``); see CoreWeave's "How do I troubleshoot suspended Kueue
workloads" (docs.coreweave.com, CKS support articles) on Kueue's node recovery.
Pure: pool data in, YAML text out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from bringup.admission.labels import BLOCK_LABEL, HOSTNAME_LABEL, POOL_LABEL, RACK_LABEL, label_value_problem
from bringup.errors import ConfigError

TOPOLOGY_API = "kueue.x-k8s.io/v1alpha1"
#: the lowest level of every Topology bringup renders (issue #27, item 6)
LOWEST_LEVEL = HOSTNAME_LABEL
FLAVOR_API = "kueue.x-k8s.io/v1beta1"


class PoolNode(BaseModel):
    """Where one node of the pool sits, as NetBox records it; ``block`` is ``""`` when unknown."""

    model_config = ConfigDict(frozen=True)
    name: str
    rack: str
    block: str = ""


def _levels(pool: str, nodes: list[PoolNode]) -> list[str]:
    """The Topology's node labels, widest first. A block level only when every node has a
    block: Kueue would leave a node without the label out of the topology."""
    problems = [f"node {n.name}: no rack in NetBox" for n in nodes if not n.rack]
    for n in nodes:
        for key, value in (("rack", n.rack), ("block", n.block)):
            if value and (p := label_value_problem(value)):
                problems.append(f"node {n.name}: {key} {value!r} {p}")
    with_block = [n.name for n in nodes if n.block]
    if with_block and len(with_block) != len(nodes):
        missing = sorted(n.name for n in nodes if not n.block)
        problems.append(f"nodes without a block (rack location) while others have one: {', '.join(missing)}")
    if problems:
        raise ConfigError(f"pool {pool!r} cannot be described as a Kueue topology: " + "; ".join(problems),
                          hint="fix the racks and rack locations in NetBox")
    return ([BLOCK_LABEL] if with_block else []) + [RACK_LABEL, LOWEST_LEVEL]


def render_pool(pool: str, nodes: Iterable[PoolNode]) -> list[dict[str, Any]]:
    """The ``Topology`` and ``ResourceFlavor`` documents of ``pool`` (a ConfigError for an
    empty pool or a node that cannot be placed)."""
    nodes = sorted(nodes, key=lambda n: n.name)
    if label_value_problem(pool) or not pool or pool != pool.lower() or "_" in pool or "." in pool:
        # the pool name is both a label value and part of two object names (DNS labels)
        raise ConfigError(f"pool name {pool!r} must be lower-case alphanumerics and '-'",
                          hint="rename the pool's tag in NetBox (pool-<name>)")
    if not nodes:
        raise ConfigError(f"pool {pool!r} has no nodes in NetBox; nothing to render",
                          hint=f"check the pool name, and that its nodes carry the tag pool-{pool}")
    levels = _levels(pool, nodes)
    topology_name = f"{pool}-topology"
    labels = {"app.kubernetes.io/managed-by": "bringup", POOL_LABEL: pool}
    topology = {"apiVersion": TOPOLOGY_API, "kind": "Topology",
                "metadata": {"name": topology_name, "labels": labels},
                "spec": {"levels": [{"nodeLabel": key} for key in levels]}}
    flavor = {"apiVersion": FLAVOR_API, "kind": "ResourceFlavor",
              "metadata": {"name": pool, "labels": labels},
              "spec": {"nodeLabels": {POOL_LABEL: pool}, "topologyName": topology_name}}
    return [topology, flavor]


def to_yaml(documents: list[dict[str, Any]], *, header: str = "") -> str:
    """One YAML stream, ``---`` between documents, keys in the order Kubernetes prints them."""
    body = yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True)
    return "".join(f"# {line}\n" for line in header.splitlines()) + body
