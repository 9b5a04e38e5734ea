"""Node records in NetBox, as the lifecycle reads and writes them: the device, its
custom fields and tags, journal entries, and evidence (through
:class:`~bringup.netbox.evidence.EvidenceStore`). Also a node's report for the fleet table, and
its lease (:mod:`bringup.netbox.lease`), written by compare-and-swap on the device's ETag.

NetBox only: an admitted node's labels in the report come from whoever wires the records
(``bringup.pipeline`` hands in a reader of the cluster), never from here."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from bringup.errors import BringupError, NetBoxUnavailable
from bringup.lifecycle.results import Evidence, NodeReport
from bringup.netbox import lease as leases
from bringup.netbox.adapter import NodeRecord
from bringup.netbox.evidence import EvidenceStore
from bringup.netbox.http_retry import OUTAGE_BACKOFF, OUTAGE_S
from bringup.retry import retry

log = logging.getLogger(__name__)
T = TypeVar("T")
#: the outage wait is bounded by its deadline, not by a count of tries
_UNBOUNDED = 1 << 30


class NetBoxRecords(leases.LeaseOps):
    """NetBox calls that ride out an outage: a call that finds NetBox unreachable pauses and
    tries again (:data:`~bringup.netbox.http_retry.OUTAGE_BACKOFF`), starting no new try once
    ``outage_s`` (settings ``netbox_outage_s``, else
    :data:`~bringup.netbox.http_retry.OUTAGE_S`) has passed; then
    :class:`~bringup.errors.NetBoxUnavailable` goes up (the lifecycle spools the result). One
    call takes at most :data:`~bringup.netbox.http_retry.WORST_CASE_S` with the defaults.

    ``labels(name)`` reads an admitted node's labels for its report (from the cluster, in
    production); without it the report has none."""

    def __init__(self, ctx, *, outage_s: float | None = None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic,
                 labels: Callable[[str], Mapping[str, str]] | None = None) -> None:
        self.ctx = ctx
        configured = getattr(getattr(ctx, "settings", None), "netbox_outage_s", None)
        self.outage_s = float(outage_s if outage_s is not None else configured if configured is not None else OUTAGE_S)
        self.sleep, self.clock = sleep, clock
        self.labels = labels

    def _retry(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        last: list[NetBoxUnavailable] = []

        def call() -> T:
            try:
                return fn(*args, **kw)
            except NetBoxUnavailable as exc:
                last[:] = [exc]
                raise

        def pause(seconds: float) -> None:
            log.warning("NetBox is unreachable (%s); trying again in %.0f s", last[0], seconds)
            self.sleep(seconds)
        return retry(call, attempts=_UNBOUNDED, retry_on=(NetBoxUnavailable,), backoff=OUTAGE_BACKOFF,
                     deadline=self.outage_s, sleep=pause, clock=self.clock)

    def node(self, name: str) -> NodeRecord:
        return self._retry(self.ctx.node, name)

    def node_list(self, names: list[str]) -> list[NodeRecord]:
        """The records of ``names`` in one read (paged), without their MACs, in that order."""
        if not names:
            return []
        by_name = {n.name: n for n in self._retry(self.ctx.netbox.nodes, names=list(names), macs=False)}
        return [by_name[n] for n in names]

    def verdict_figures(self, nodes: list[NodeRecord]) -> dict[str, dict[str, Any]]:
        """Each node's verdict figures (name -> figures; none for a node without a readable
        verdict), the verdict documents of all of them read in a few requests."""
        return self._retry(self._figures_of, nodes)

    def _figures_of(self, nodes: list[NodeRecord]) -> dict[str, dict[str, Any]]:
        docs = self.ctx.evidence.get_many([(n.name, n.custom_fields) for n in nodes], "verdict")
        return {name: dict(doc.get("figures") or {}) if isinstance(doc, dict) else {} for name, doc in docs.items()}

    def write(self, node: NodeRecord, *, stage: str | None = None, status: str | None = None,
              fields: dict[str, Any] | None = None, add_tags: tuple[str, ...] = (),
              remove_tags: tuple[str, ...] = ()) -> bool:
        """One PATCH. Returns True when ``node`` now holds every custom field as NetBox
        answered the write (its lease included: as current as a read would be)."""
        after = self._retry(self.ctx.netbox.update_node, node.id, stage=stage, status=status, fields=fields,
                            add_tags=list(add_tags), remove_tags=list(remove_tags), tags=getattr(node, "tags", None))
        # keep the in-memory record in step with what NetBox now holds
        node.custom_fields.update(fields or {})
        if stage:
            node.stage = stage
            node.custom_fields["bringup_stage"] = stage
        if status:
            node.status = status
        if add_tags or remove_tags:
            node.tags = sorted((set(getattr(node, "tags", ())) | set(add_tags)) - set(remove_tags))
        if after is None:
            return False
        fields_now, version = after
        node.custom_fields = dict(fields_now)
        node.stage = str(fields_now.get("bringup_stage") or node.stage)
        node.version = version   # after the fields: see _cas
        return True

    def refresh(self, node: NodeRecord) -> Any:
        """Bring ``node``'s changing part (stage, custom fields, status, tags) up to what
        NetBox holds now, in one small read; returns its lease as read. What a run does
        not change (SKU, pool, addresses) stays as read with the node."""
        state = self._retry(self.ctx.netbox.device_now, node.id)
        node.custom_fields = dict(state.custom_fields)
        node.stage = str(state.custom_fields.get("bringup_stage") or "planned")
        node.status, node.tags = state.status, list(state.tags)
        node.version = state.etag   # after the fields: see _cas
        return state.custom_fields.get(leases.FIELD)

    # --- the node's lease: each change a compare-and-swap on the device's version --------
    def _cas(self, node: NodeRecord, change):
        """The first try writes on the version this process last saw with the record (its
        read, its last write's answer): NetBox refuses it (412) if anyone wrote since, and
        then the lease is read again with its version. Each setter stores the fields before
        the version and this reads the version first, so a version always comes with
        fields at least as new: a stale pair can only be refused, never written on."""
        nb = self.ctx.netbox
        known = [getattr(node, "version", "")]

        def read():
            if known[0]:
                version, known[0] = known[0], ""
                return version, node.custom_fields.get(leases.FIELD)
            etag, fields = self._retry(nb.device_fields, node.id)
            return etag, fields.get(leases.FIELD)

        def write(etag, new):
            version = self._retry(nb.set_fields_if_match, node.id, {leases.FIELD: new}, etag)
            node.custom_fields[leases.FIELD] = new   # one key, in place: the walk's thread writes the rest
            node.version = version
            return version
        return leases.cas(read, write, change)

    def lease(self, node: NodeRecord) -> Any:
        return self._retry(self.ctx.netbox.device_fields, node.id)[1].get(leases.FIELD)

    def journal(self, node: NodeRecord, text: str, kind: str = "info") -> None:
        self._retry(self.ctx.netbox.journal, node.id, text, kind=kind)

    def put_evidence(self, node: NodeRecord, evidence: list[Evidence]) -> dict[str, Any]:
        store = self.ctx.evidence
        refs = [self._retry(store.put, node.id, e.kind, e.document, summary=e.summary, style=e.style)
                for e in evidence]
        return EvidenceStore.index_update(node.custom_fields, refs)

    def report(self, node: NodeRecord, verdict: str, figures: dict[str, Any] | None = None) -> NodeReport:
        """The node's row; ``figures``: its verdict's, when the caller has them (the judge's
        result of this run), else read from the verdict document."""
        if figures is None:
            try:   # a row without its figures, rather than none, when they cannot be read
                figures = self._figures_of([node]).get(node.name, {})
            except BringupError:
                figures = {}
        figures = dict(figures)
        labels: dict[str, str] = {}
        if verdict == "admitted" and self.labels is not None:
            try:
                labels = dict(self.labels(node.name))
            except BringupError:
                labels = {}
        reason = str(node.custom_fields.get("bringup_reason") or "")
        reasons = [r for r in reason.split("; ") if r]
        if verdict == "pending" and reason.startswith("held in"):
            verdict = "held"
        if verdict == "admitted":
            reasons = []
        return NodeReport(node=node.name, rack=node.rack, verdict=verdict, stage=node.stage, reasons=reasons,
                          figures=figures, labels=labels, netbox_url=node.url)
