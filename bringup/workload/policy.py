"""The pool acceptance policy (reference and limits, from YAML) and the verdict (pure).

The repo's defaults are ``bringup/data/pool_acceptance.yaml``; a pool's ``acceptance``
section in NetBox (its ``bringup_pool`` config context) overrides any of them. The verdict
judges what one run observed (:class:`Observation`): each limit is a finding when broken,
each figure that was never reported is unknown, and only a run with every figure present
and within its limit passes.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.errors import ConfigError
from bringup.resources import data_file
from bringup.workload.phases import PhaseLog
from bringup.yamlio import load_file, validation_error

POLICY_FILE = "pool_acceptance.yaml"
Outcome = Literal["pass", "fail", "unknown"]


class AcceptancePolicy(BaseModel):
    """One pool's reference and limits, and how its acceptance job runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    #: the pool's reference: whole-job training throughput (samples/s) of a good run; 0: none
    #: set yet, so the throughput is unknown (never a pass)
    reference_samples_per_s: float = Field(default=0.0, ge=0)
    #: the least share of the reference the run must reach
    min_throughput_ratio: float = Field(default=0.9, gt=0, le=2)
    max_queue_wait_s: float = Field(default=900.0, gt=0)
    #: the slowest worker's dataset sample + base weights fetch
    max_data_s: float = Field(default=600.0, gt=0)
    #: from the worker pod's deletion to its replacement reporting the restored checkpoint
    max_restore_s: float = Field(default=600.0, gt=0)
    #: the comm benchmark's bus bandwidth floor (GB/s); 0: reported, not judged
    min_busbw_gbps: float = Field(default=0.0, ge=0)
    #: how long the whole run may take once admitted
    run_timeout_s: float = Field(default=3600.0, gt=0)
    #: how long the job trains (its TRAIN_SECONDS)
    train_seconds: float = Field(default=300.0, gt=0)
    #: pods of the job (one per node), 0: every node of the pool
    workers: int = Field(default=0, ge=0)
    gpus_per_worker: int = Field(default=8, ge=0)
    #: the image manifest's container role the job runs (``containers:`` of the manifest)
    image_role: str = "training"
    #: what the container runs; empty: the image's entrypoint
    command: list[str] = Field(default_factory=list)
    #: extra environment of the container (NCCL settings; the lab's fault settings)
    env: dict[str, str] = Field(default_factory=dict)
    namespace: str = "bringup-system"
    backoff_limit: int = Field(default=3, ge=1)
    poll_s: float = Field(default=2.0, gt=0)


class PolicyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    defaults: dict[str, Any] = Field(default_factory=dict)


def load_policy(pool_section: dict[str, Any] | None = None, path: Path | None = None) -> AcceptancePolicy:
    """The repo's defaults with the pool's ``acceptance`` section over them; a bad value is
    one ConfigError naming its key and where it came from."""
    p = path or data_file(POLICY_FILE)
    doc = load_file(p)
    try:
        base = PolicyFile.model_validate(doc.data or {}).defaults
        merged = AcceptancePolicy.model_validate(base)
    except ValidationError as exc:
        raise validation_error(exc, doc, "pool acceptance policy") from None
    if not pool_section:
        return merged
    if not isinstance(pool_section, dict):
        raise ConfigError("the pool's acceptance section must be a mapping",
                          hint="fix bringup_pool.acceptance in the pool's NetBox config context")
    try:
        return AcceptancePolicy.model_validate({**base, **pool_section})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ConfigError(f"bringup_pool.acceptance.{where}: {err['msg']}",
                          hint="fix the pool's config context in NetBox") from None


class WorkerLog(BaseModel):
    """One pod of the job: which index and node it ran as, and what its log said."""

    pod: str
    node: str = ""
    index: int = 0
    #: deleted by the run (its replacement carries on): not expected to finish
    replaced: bool = False
    log: PhaseLog = Field(default_factory=PhaseLog)


class Observation(BaseModel):
    """What one acceptance run saw (:mod:`bringup.workload.run` fills it)."""

    pool: str
    job: str = ""
    admitted: bool = False
    queue_wait_s: float | None = None
    workers: list[WorkerLog] = Field(default_factory=list)
    deleted_pod: str = ""
    checkpoint_step: float | None = None
    restore_s: float | None = None
    restored_step: float | None = None
    finished: Literal["succeeded", "failed", "timeout", "not-admitted", ""] = ""
    notes: list[str] = Field(default_factory=list)


class Verdict(BaseModel):
    """The pool's acceptance: outcome, why, and every figure it was judged on."""

    pool: str
    outcome: Outcome
    reasons: list[str] = Field(default_factory=list)
    unknown: list[str] = Field(default_factory=list)
    figures: dict[str, float | None] = Field(default_factory=dict)
    nodes: list[str] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    def summary(self) -> str:
        why = "; ".join(self.reasons + [f"unknown: {u}" for u in self.unknown]) or "every figure within its limit"
        return f"pool {self.pool}: acceptance {self.outcome.upper()} ({why})"


def _fetch_s(w: WorkerLog) -> float | None:
    data, weights = w.log.last("data"), w.log.last("weights")
    if data is None or weights is None:
        return None
    return data.figures["seconds"] + weights.figures["seconds"]


def _throughput(workers: list[WorkerLog]) -> tuple[float | None, float | None]:
    """Whole-job samples/s (the sum of each index's median) and the median MFU, from the
    train lines; None where an index reported none."""
    by_index: dict[int, list[float]] = {}
    mfu: list[float] = []
    for w in workers:
        for p in w.log.all("train"):
            if "samples_per_s" in p.figures:
                by_index.setdefault(w.index, []).append(p.figures["samples_per_s"])
            if "mfu" in p.figures:
                mfu.append(p.figures["mfu"])
    indexes = {w.index for w in workers}
    if not by_index or set(by_index) != indexes:
        return None, statistics.median(mfu) if mfu else None
    return sum(statistics.median(v) for v in by_index.values()), statistics.median(mfu) if mfu else None


def judge(obs: Observation, policy: AcceptancePolicy) -> Verdict:
    """The verdict of one run against the pool's policy."""
    reasons: list[str] = []
    unknown: list[str] = []
    figures: dict[str, float | None] = {"queue_wait_s": obs.queue_wait_s}
    nodes = sorted({w.node for w in obs.workers if w.node})
    if not obs.admitted:
        reasons.append(f"the job was never admitted by its Kueue queue within {policy.max_queue_wait_s:g} s")
        return Verdict(pool=obs.pool, outcome="fail", reasons=reasons, figures=figures, nodes=nodes)
    if obs.queue_wait_s is not None and obs.queue_wait_s > policy.max_queue_wait_s:
        reasons.append(f"queue wait {obs.queue_wait_s:.1f} s > limit {policy.max_queue_wait_s:g} s")
    for w in obs.workers:
        for f in w.log.findings:
            unknown.append(f"pod {w.pod}: {f}")
        for p in w.log.phases:
            if p.text.get("status") == "failed":
                reasons.append(f"pod {w.pod}: phase {p.name} failed: {p.text.get('reason', 'no reason given')}")
    fetch = [_fetch_s(w) for w in obs.workers]
    figures["data_fetch_s"] = max((f for f in fetch if f is not None), default=None)
    if not obs.workers or any(f is None for f in fetch):
        unknown.append("data and weights fetch time (a worker did not report both phases)")
    elif figures["data_fetch_s"] > policy.max_data_s:
        reasons.append(f"data fetch {figures['data_fetch_s']:.1f} s > limit {policy.max_data_s:g} s")
    busbw = [p.figures["busbw_gbps"] for w in obs.workers for p in w.log.all("comm")]
    figures["busbw_gbps"] = min(busbw) if busbw else None
    if not busbw:
        unknown.append("comm benchmark bus bandwidth (no comm phase)")
    elif policy.min_busbw_gbps and min(busbw) < policy.min_busbw_gbps:
        reasons.append(f"comm busbw {min(busbw):.1f} GB/s < floor {policy.min_busbw_gbps:g} GB/s")
    samples, mfu = _throughput(obs.workers)
    figures.update({"samples_per_s": samples, "mfu": mfu,
                    "reference_samples_per_s": policy.reference_samples_per_s or None})
    if samples is None:
        unknown.append("training throughput (a worker reported no samples/s)")
    elif not policy.reference_samples_per_s:
        unknown.append("training throughput vs reference (the pool has no reference_samples_per_s)")
    else:
        ratio = samples / policy.reference_samples_per_s
        figures["throughput_ratio"] = ratio
        if ratio < policy.min_throughput_ratio:
            reasons.append(f"throughput {samples:.1f} samples/s is {ratio:.0%} of the reference "
                           f"{policy.reference_samples_per_s:g} (at least {policy.min_throughput_ratio:.0%})")
    done = [w.log.last("done") for w in obs.workers if not w.replaced]
    if not done or any(d is None for d in done):
        unknown.append("training result (a worker never reported done)")
    else:
        figures["loss_first"] = max(d.figures["loss_first"] for d in done)
        figures["loss_last"] = max(d.figures["loss_last"] for d in done)
        if not all(d.figures["loss_last"] < d.figures["loss_first"] for d in done):
            reasons.append(f"loss did not go down (first {figures['loss_first']:.4g}, last {figures['loss_last']:.4g})")
    figures.update({"checkpoint_step": obs.checkpoint_step, "restored_step": obs.restored_step,
                    "restore_s": obs.restore_s})
    if obs.checkpoint_step is None:
        unknown.append("checkpoint (none written before the worker was deleted)")
    elif obs.restore_s is None or obs.restored_step is None:
        unknown.append(f"restore (the replacement of {obs.deleted_pod or 'the worker'} never reported one)")
    else:
        if obs.restored_step < obs.checkpoint_step:
            reasons.append(f"resumed at step {obs.restored_step:g}, before the checkpoint's {obs.checkpoint_step:g}")
        if obs.restore_s > policy.max_restore_s:
            reasons.append(f"restore took {obs.restore_s:.1f} s > limit {policy.max_restore_s:g} s")
    if obs.finished != "succeeded":
        reasons.append(f"the job did not succeed ({obs.finished or 'not finished'})"
                       + (": " + "; ".join(obs.notes) if obs.notes else ""))
    outcome: Outcome = "fail" if reasons else ("unknown" if unknown else "pass")
    return Verdict(pool=obs.pool, outcome=outcome, reasons=reasons, unknown=unknown, figures=figures, nodes=nodes)


__all__ = ["POLICY_FILE", "AcceptancePolicy", "Observation", "Verdict", "WorkerLog", "judge", "load_policy"]
