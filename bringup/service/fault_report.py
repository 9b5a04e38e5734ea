"""What bringup tells NVSentinel about a node it found faulty (issue #27, item 2): the
``ExternalFault`` it creates instead of cordoning when NVSentinel owns the nodes' health.

NVSentinel's ADR-049: an external system's fault enters NVSentinel's ownership as an
ExternalFault whose ``spec.healthEvent`` is a HealthEvent (the fields an
ExternalRemediationRequest carries); NVSentinel emits it with ``recommendedAction: CUSTOM``
and ``customRecommendedAction: external-remediation``, quarantines and drains the node and
creates an ERR owned by the EF, which bringup's hand-off takes. What goes into the event is
``bringup/data/nvsentinel.yaml``'s ``report`` section (:class:`ReportPolicy`).

Pure: the look's critical signals and a time in, the object's body out. Nothing here is
secret: the event carries the findings' messages, the node's name and GPU indexes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bringup.kube.external_fault import GROUP, KIND, MANAGED_BY, VERSION
from bringup.service.health import Signal


class ReportPolicy(BaseModel):
    """``nvsentinel.yaml``'s ``report`` section."""

    model_config = ConfigDict(extra="forbid")
    agent: str = Field(min_length=1)
    check_name: str = Field(min_length=1)
    custom_action: str = Field(min_length=1)
    default_component: str = Field(min_length=1)
    #: bringup's signal code -> NVSentinel's componentClass
    components: dict[str, str] = Field(default_factory=dict)


def error_code(signal: Signal) -> str:
    """The finding as NVSentinel's errorCode: ``XID-<n>`` for an XID, else bringup's code."""
    xid = signal.evidence.get("xid")
    return f"XID-{xid}" if isinstance(xid, int) else signal.code


def component(policy: ReportPolicy, signals: Sequence[Signal]) -> str:
    """The findings' componentClass: the one all of them map to, else the default."""
    found = {policy.components.get(s.code, policy.default_component) for s in signals}
    return found.pop() if len(found) == 1 else policy.default_component


def fault_name(node: str, at: datetime) -> str:
    """A DNS-1123 name, the node's and the finding's time: a retried run names the same
    report (and finds it created), a later finding a new one."""
    base = re.sub(r"[^a-z0-9-]+", "-", node.lower()).strip("-")[:200] or "node"
    digest = hashlib.sha256(node.encode()).hexdigest()[:6]   # two names that clean up alike stay apart
    return f"bringup-{base}-{digest}-{at.strftime('%Y%m%d%H%M%S')}"


def external_fault(policy: ReportPolicy, node: str, signals: Sequence[Signal], at: datetime) -> dict[str, Any]:
    """The ExternalFault bringup creates for ``node``'s critical ``signals`` found at ``at``."""
    if not signals:
        raise ValueError("an ExternalFault reports at least one finding")
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    gpus = sorted({s.evidence["gpu"] for s in signals if isinstance(s.evidence.get("gpu"), int)})
    entities = ([{"entityType": "GPU", "entityValue": str(g)} for g in gpus]
                or [{"entityType": "Node", "entityValue": node}])
    codes = list(dict.fromkeys(error_code(s) for s in signals))
    name = fault_name(node, at)
    event = {
        "version": 1, "agent": policy.agent, "checkName": policy.check_name,
        "componentClass": component(policy, signals), "nodeName": node,
        "errorCode": codes, "entitiesImpacted": entities,
        "isFatal": True, "isHealthy": False,
        "message": "; ".join(s.message for s in signals)[:2000],
        "recommendedAction": "CUSTOM", "customRecommendedAction": policy.custom_action,
        "generatedTimestamp": stamp, "id": f"he-{name}",
        "metadata": {"source": "bringup", "signals": ",".join(dict.fromkeys(s.code for s in signals))},
    }
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
            "metadata": {"name": name, "labels": {MANAGED_BY[0]: MANAGED_BY[1],
                                                  "nvsentinel.nvidia.com/node": node[:63].rstrip("-._")}},
            "spec": {"healthEvent": event}}
