"""Node conditions: reading them (what a health watch acts on), setting one as a Node
Problem Detector does (``nodes/status``), and telling which ones are problems.

Conditions differ in polarity: ``Ready`` is healthy when True, every other one when
False. The kubelet's pressure conditions and the Node Problem Detector's default
conditions (``KernelDeadlock``, ``ReadonlyFilesystem``, ``FrequentKubeletRestart``...;
tests/fixtures/kube/node-npd-conditions.json) report a problem by turning True, so any
condition but Ready that is True is a problem. ``Unknown`` (the node stopped reporting)
is a problem for Ready only: a custom condition nobody updates is not evidence.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict

from bringup.kube.adapter import SMP, KubeAdapter
from bringup.kube.models import _parse

#: the Node Problem Detector's default conditions and the reason each has while healthy
NPD_CONDITIONS = {
    "KernelDeadlock": "KernelHasNoDeadlock",
    "ReadonlyFilesystem": "FilesystemIsNotReadOnly",
    "FrequentKubeletRestart": "NoFrequentKubeletRestart",
    "FrequentDockerRestart": "NoFrequentDockerRestart",
    "FrequentContainerdRestart": "NoFrequentContainerdRestart",
    "CorruptDockerOverlay2": "NoCorruptDockerOverlay2",
}


class NodeCondition(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: str
    status: str
    reason: str = ""
    message: str = ""
    lastTransitionTime: str | None = None
    lastHeartbeatTime: str | None = None

    @property
    def problem(self) -> bool:
        if self.type == "Ready":
            return self.status != "True"
        return self.status == "True"


class _Status(BaseModel):
    conditions: list[NodeCondition] | None = None


class _Node(BaseModel):
    status: _Status = _Status()


def parse_conditions(node: Any, source: str = "Kubernetes Node") -> list[NodeCondition]:
    return list(_parse(_Node, node, source).status.conditions or [])


def node_problems(conditions: list[NodeCondition]) -> list[NodeCondition]:
    """The conditions that say the node is unwell (pure)."""
    return [c for c in conditions if c.problem]


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_patch(current: list[NodeCondition], type_: str, status: str, reason: str, message: str,
                    now: str | None = None) -> dict[str, Any]:
    """Strategic-merge patch of ``nodes/status`` setting one condition (merged by type).
    The transition time moves only when the status changes, as NPD and the kubelet do."""
    if status not in ("True", "False", "Unknown"):
        raise ValueError(f"condition status must be True, False or Unknown, not {status!r}")
    ts = now or _now()
    old = next((c for c in current if c.type == type_), None)
    moved = old is None or old.status != status or not old.lastTransitionTime
    cond = {"type": type_, "status": status, "reason": reason, "message": message, "lastHeartbeatTime": ts,
            "lastTransitionTime": ts if moved else old.lastTransitionTime}
    return {"status": {"conditions": [cond]}}


def node_conditions(kube: KubeAdapter, node: str) -> list[NodeCondition]:
    return parse_conditions(kube._read_node(node), f"Node {node}")


def set_node_condition(kube: KubeAdapter, node: str, type_: str, status: str, reason: str,
                       message: str) -> list[NodeCondition]:
    """Set one condition on the node (as NPD does) and return the node's conditions."""
    patch = condition_patch(node_conditions(kube, node), type_, status, reason, message)
    data = kube._call(f"set condition {type_} on node {node}", kube.core.patch_node_status, node, patch,
                      _content_type=SMP)
    return parse_conditions(data, f"Node {node}")
