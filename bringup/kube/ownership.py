"""Who holds a node: the marks bringup puts on every cordon it places, and the reading of
anyone else's (issue #27, item 1).

Two systems that cordon, taint and uncordon the same node fight: the health systems' users
report nodes uncordoned by one system while another (or a person) still held them. So every
cordon bringup places carries who placed it, why and when, and bringup lifts only the
cordons that carry its own mark. The marks follow the convention of NVIDIA's NVSentinel
fault-quarantine module, which writes ``<labelPrefix>cordon-by``, ``cordon-reason`` and
``cordon-timestamp`` on the nodes it cordons (NVIDIA/NVSentinel,
fault-quarantine-module/pkg/reconciler/reconciler.go, ``SetLabelKeys``; its docs select them
as ``k8saas.nvidia.com/cordon-by=NVSentinel``). NVSentinel writes labels; bringup writes
annotations under its own prefix, because a reason is free text and a label value is not.
Node Problem Detector never cordons (it reports conditions), so it has no mark to read.

A cordon with no ``cordon-by`` mark of ours is someone else's: a person's ``kubectl cordon``,
or another system's (its own ``.../cordon-by`` label or annotation names it when it has one).
Taints are owned by key: bringup's are under ``bringup.io/``; it never removes another's.
Nodes cordoned by bringup before these marks existed carry its quarantine taint or reason
annotation: those cordons are read as bringup's. Pure: node objects in, patches and words out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from bringup.admission.labels import PREFIX, QUARANTINE_KEY, REASON_ANNOTATION

OWNER = "bringup"
CORDON_BY = f"{PREFIX}/cordon-by"
CORDON_REASON = f"{PREFIX}/cordon-reason"
CORDON_TIMESTAMP = f"{PREFIX}/cordon-timestamp"
MARKS = (CORDON_BY, CORDON_REASON, CORDON_TIMESTAMP)
#: set when bringup taints a node someone else holds cordoned: whose cordon it found (its
#: own taint or reason on the node must not make the cordon look like bringup's)
CORDON_KEPT = f"{PREFIX}/cordon-kept-for"


def marks(reason: str, at: dt.datetime | None = None) -> dict[str, str]:
    """The annotations of a cordon bringup places now, for ``reason``."""
    at = at or dt.datetime.now(dt.UTC)
    return {CORDON_BY: OWNER, CORDON_REASON: reason[:1000],
            CORDON_TIMESTAMP: at.astimezone(dt.UTC).isoformat(timespec="seconds")}


def _meta(node: Mapping[str, Any], key: str) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get(key) or {})


def _other_mark(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str:
    """Another system's ``.../cordon-by`` (NVSentinel's label, say), with its reason."""
    for source in (labels, annotations):
        for key, value in sorted(source.items()):
            if key.endswith("/cordon-by") and key != CORDON_BY and value:
                reason = source.get(key.removesuffix("cordon-by") + "cordon-reason", "")
                return f"{value} ({key})" + (f": {reason}" if reason else "")
    return ""


def holder_of(unschedulable: bool, labels: Mapping[str, str], annotations: Mapping[str, str],
              taint_keys: list[str]) -> str:
    """Who holds the node cordoned: ``""`` when it is not cordoned, :data:`OWNER` when the
    cordon is bringup's, else words naming the other holder."""
    if not unschedulable:
        return ""
    if annotations.get(CORDON_BY) == OWNER:
        return OWNER
    other = _other_mark(labels, annotations)
    if other:
        return other
    if annotations.get(CORDON_BY):
        return f"{annotations[CORDON_BY]} ({CORDON_BY})"
    if annotations.get(CORDON_KEPT):
        return annotations[CORDON_KEPT]
    if QUARANTINE_KEY in taint_keys or annotations.get(REASON_ANNOTATION):
        return OWNER  # cordoned by a bringup from before the marks: its taint or reason says so
    return "a person or another system (cordoned with no cordon-by mark)"


def holder(node: Mapping[str, Any]) -> str:
    """:func:`holder_of` a raw Node object."""
    taints = [t.get("key", "") for t in (node.get("spec") or {}).get("taints") or []]
    return holder_of(bool((node.get("spec") or {}).get("unschedulable")), _meta(node, "labels"),
                     _meta(node, "annotations"), taints)


def state_holder(state: Any) -> str:
    """:func:`holder_of` a parsed :class:`bringup.kube.models.NodeState`."""
    if not getattr(state, "exists", False):
        return ""
    return holder_of(bool(state.unschedulable), state.labels, state.annotations, [t.key for t in state.taints])


def ours(node: Mapping[str, Any]) -> bool:
    """The node's cordon, if any, is bringup's to lift."""
    return holder(node) in ("", OWNER)


def cordon_patch(node: Mapping[str, Any], reason: str, at: dt.datetime | None = None) -> dict[str, Any]:
    """Cordon with bringup's marks; a node another holder already cordoned keeps its
    holder's marks (bringup adds nothing to a cordon it did not place)."""
    if not ours(node):
        return {}
    return {"metadata": {"annotations": {**marks(reason, at), CORDON_KEPT: None}}, "spec": {"unschedulable": True}}


def kept_mark(node: Mapping[str, Any]) -> dict[str, Any]:
    """The annotation that remembers whose cordon bringup found on a node it taints, ``{}``
    when the cordon is bringup's (or there is none)."""
    return {} if ours(node) else {CORDON_KEPT: holder(node)}


def uncordon_patch(node: Mapping[str, Any]) -> dict[str, Any]:
    """Lift bringup's own cordon and its marks; ``{}`` for a cordon someone else holds."""
    if not ours(node):
        return {}
    return {"metadata": {"annotations": dict.fromkeys((*MARKS, CORDON_KEPT))}, "spec": {"unschedulable": None}}


def foreign_taints(node: Mapping[str, Any]) -> list[str]:
    """The node's taints bringup did not place (keys outside its prefix)."""
    return [f"{t.get('key')}:{t.get('effect')}" for t in (node.get("spec") or {}).get("taints") or []
            if not str(t.get("key", "")).startswith(f"{PREFIX}/")]


__all__ = ["CORDON_BY", "CORDON_KEPT", "CORDON_REASON", "CORDON_TIMESTAMP", "MARKS", "OWNER", "cordon_patch", "foreign_taints",
           "holder", "holder_of", "kept_mark", "marks", "ours", "state_holder", "uncordon_patch"]
