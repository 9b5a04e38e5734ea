"""A node's NetBox history as the real code writes it, for the fleet-data and ledger tests:
agent documents shaped like ``burnin/``'s output, stored through the real
:class:`~bringup.netbox.evidence.EvidenceStore` and judged by the real judge step's
:func:`~bringup.acceptance.judge_step.verdict_of`; journal entries carry NetBox-style ``created``."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from bringup.acceptance.digest import with_digest
from bringup.acceptance.judge_step import verdict_of
from bringup.insight.fleetdata import JournalEntry, NodeHistory, StageChange
from bringup.netbox.adapter import NodeRecord
from bringup.netbox.evidence import EvidenceStore
from bringup.sku import load_skus

H100 = "hgx-h100-80gb"
T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)

METRICS = {
    "versions": {"mismatches": 0},
    "inventory": {"gpu_count": 8, "memory_mib_min": 81559},
    "ecc": {"ecc_disabled_gpus": 0, "ecc_pending_gpus": 0, "uncorrected_volatile": 0, "uncorrected_aggregate": 0,
            "corrected_volatile": 0, "row_remap_pending_gpus": 0, "row_remap_failure_gpus": 0, "retired_pages": 0,
            "lifetime_limit_gpus": 0, "remapped_rows_uncorrectable_max": 0},
    "nvlink": {"links_active": 144, "links_down": 0, "error_total": 0},
    "network": {"ib_ports": 8, "ports_down": 0, "ports_slow": 0, "min_rate_gbps": 400.0},
    "dcgm": {"tests_passed": 3, "tests_failed": 0, "tests_not_run": 0},
    "gpu_burn": {"faulty_gpus": 0, "errors_total": 0, "gpus_tested": 8, "gpus_no_work": 0, "gflops_min": 51000.0},
    "nccl": {"busbw_largest_gbps": 476.3, "wrong_total": 0, "oob_values": 0},
    "cpu_mem": {"stressors_failed": 0, "rc": 0},
    "pcie": {"downtrained_gpus": 0, "replay_total": 0, "gen_min": 5, "width_min": 16},
    "clocks": {"max_temp_c": 63, "thermal_slowdown_gpus": 0, "power_brake_gpus": 0, "max_power_w": 690.5},
    "xid": {"xid_count": 0, "fatal_count": 0, "codes": []},
    "disk": {"read_mib_s": 50.0, "write_mib_s": 50.0, "job_errors": 0},
}


def agent_document(node: str, *, hot_gpu: int | None = None, started: datetime = T0) -> dict[str, Any]:
    """A whole agent result; ``hot_gpu`` runs at 95 C (over the H100 limit of 87 C)."""
    checks = []
    for name, metrics in METRICS.items():
        c: dict[str, Any] = {"name": name, "status": "pass", "metrics": copy.deepcopy(metrics), "data": {}}
        if name == "inventory":
            c["data"] = {"gpus": [{"index": i, "serial": f"SN-{node}-{i}", "memory_mib": 81559} for i in range(8)],
                         "driver_version": "570.86.15"}
        if name == "clocks":
            c["data"] = {"gpus": [{"gpu": i, "max_temp_c": 95 if i == hot_gpu else 60 + i, "max_power_w": 680.0 + i,
                                   "reasons_seen": [], "samples": 30} for i in range(8)]}
            if hot_gpu is not None:
                c["metrics"]["max_temp_c"] = 95
                c["status"] = "fail"
                c["findings"] = [{"code": "temperature_high", "message": f"GPU {hot_gpu}: 95 C under load",
                                  "gpu": hot_gpu, "value": 95}]
        if name == "gpu_burn":
            c["data"] = {"gflops": [51000.0 + 100 * i for i in range(8)], "gpus": {str(i): "OK" for i in range(8)},
                         "procd": [100] * 8, "errors": [0] * 8}
        if name == "versions":
            c["data"] = {"installed": {"driver": "570.86.15"}}
        checks.append(c)
    end = started + timedelta(minutes=30)
    return {"schema_version": 1, "agent_version": "0.1.0", "node": {"name": node, "hostname": node},
            "started": started.isoformat().replace("+00:00", "Z"), "finished": end.isoformat().replace("+00:00", "Z"),
            "plan": {"checks": list(METRICS)}, "checks": checks}


def record(node: str, node_id: int = 1) -> NodeRecord:
    sku = load_skus()[H100]
    return NodeRecord(id=node_id, name=node, site="lab", rack="r1", status="active", stage="active", sku=sku,
                      pool={"name": "training"}, macs={}, bmc_address="", address="", serial="", custom_fields={},
                      url="", tags=[])


class Journal:
    """NetBox's journal for the store: ids in order, ``created`` from a settable clock."""

    def __init__(self) -> None:
        self.entries: list[JournalEntry] = []
        self.now = T0

    def journal(self, node_id: int, comments: str, kind: str = "info") -> int:
        self.entries.append(JournalEntry(len(self.entries) + 1, self.now.isoformat(), kind, comments))
        return len(self.entries)

    def journal_texts(self, entry_ids: list[int]) -> dict[int, str]:
        return {e.id: e.comments for e in self.entries if e.id in entry_ids}


def burn_in_and_judge(journal: Journal, node: str, at: datetime, *, hot_gpu: int | None = None,
                      raw: Any = None, digests: bool = True) -> dict[str, Any]:
    """What the burn_in and judge steps store: the burn-in evidence, then the verdict, each
    with its digest (``digests=False``: as they stored it before digests existed)."""
    store = EvidenceStore(journal)
    doc = agent_document(node, hot_gpu=hot_gpu, started=at) if raw is None else raw
    stored = {"plan": {"profile": "quick", "checks": list(METRICS)}, "rc": 0, "document": doc}
    journal.now = at + timedelta(minutes=31)
    head = "## Burn-in document (quick profile)"
    store.put(1, "burnin", stored, summary=with_digest("burnin", stored, head) if digests else head)
    verdict = verdict_of(node, record(node), stored)
    journal.now = at + timedelta(minutes=32)
    head = f"## Burn-in verdict: {verdict['status'].upper()}"
    store.put(1, "verdict", verdict, summary=with_digest("verdict", verdict, head) if digests else head)
    return verdict


def changes(*steps: tuple[float, str]) -> list[StageChange]:
    """Stage changes at hours after T0."""
    return [StageChange((T0 + timedelta(hours=h)).isoformat(), s) for h, s in steps]


def history(node: str, journal: Journal | None = None, steps: tuple = (), **kw: Any) -> NodeHistory:
    return NodeHistory(node=node, site="lab", rack="r1", pool=kw.pop("pool", "training"), sku=H100,
                       gpus=kw.pop("gpus", 8), stage=kw.pop("stage", "active"),
                       journal=list(journal.entries) if journal else [], changes=changes(*steps), **kw)
