"""The GPU-hours ledger and what bringing a fleet up costs, from stage timestamps.

Every hour a node exists is on the ledger, in the account of the stage it was in
(``bringup/data/ledger.yaml``: burn-in, quarantine, waiting, serving), times its GPUs.
Pure functions over :class:`~bringup.insight.fleetdata.FleetData`'s ``nodes`` and ``stages``
tables; ``at`` is the query time: a stage entered before it and not left yet counts up
to ``at``, anything after ``at`` does not count.

Cost: **the hours a fleet serves (allocated GPU-hours) are not its cost.** A GPU costs
the same whether it serves, burns in, waits for a slot or sits in quarantine, and the
nodes that never pass cost as much as those that do. So, as in the seed's cost model
(effective cost = everything spent / accepted units):

- ``total_cost_usd``: every GPU-hour on the ledger, in every account, times the
  settings' ``gpu_hour_usd``;
- ``cost_per_accepted_usd``: that total over the nodes that reached serving (a pool
  with none accepted has no such figure, but still its total);
- ``bringup_cost_usd``: the part that served nothing (burn-in, quarantine, waiting);
- ``failed_burnin_gpu_h``: GPU-hours of burn-ins that ended in quarantine (the failed
  runs: a stretch in the burn-in account followed directly by quarantine).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from bringup.errors import ConfigError
from bringup.lifecycle.engine import LifecycleError, State, parse_state
from bringup.resources import data_file
from bringup.yamlio import load_file, validation_error

ACCOUNTS = ("burnin", "quarantine", "waiting", "serving")
#: a stage value the lifecycle does not know (a hand edit in NetBox): shown, never serving
UNKNOWN = "unknown"
HOURS = [f"{a}_h" for a in (*ACCOUNTS, UNKNOWN)]


class LedgerFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    accounts: dict[str, list[str]]
    #: the normalised cost's terms that gpu_hour_usd does not hold ($ per GPU-hour; unitcost.py)
    rates: dict[str, float] = {}


def load_accounts(path: Path | None = None) -> dict[str, str]:
    """stage -> account, from the YAML; every lifecycle state in exactly one account."""
    path = path or data_file("ledger.yaml")
    doc = load_file(path)
    try:
        lf = LedgerFile.model_validate(doc.data or {})
    except ValidationError as exc:
        raise validation_error(exc, doc, "ledger file") from None
    if sorted(lf.accounts) != sorted(ACCOUNTS):
        raise ConfigError(f"{path}: accounts are {sorted(lf.accounts)}, not {sorted(ACCOUNTS)}")
    out: dict[str, str] = {}
    for account, stages in lf.accounts.items():
        for stage in stages:
            if stage in out:
                raise ConfigError(f"{path}: stage {stage!r} is in accounts {out[stage]} and {account}")
            out[stage] = account
    missing = [s.value for s in State if s.value not in out]
    extra = sorted(set(out) - {s.value for s in State})
    if missing or extra:
        raise ConfigError(f"{path}: " + "; ".join(
            ([f"no account for stages {missing}"] if missing else []) +
            ([f"{extra} are not lifecycle stages"] if extra else [])))
    return out


def _account(stage: str, accounts: dict[str, str]) -> str:
    try:
        return accounts[parse_state(stage).value]  # legacy names (judged, admitted) map too
    except LifecycleError:
        return UNKNOWN


def intervals(stages: pd.DataFrame, at: pd.Timestamp, accounts: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per stage stay, cut at ``at``: node, stage, account, start, end, hours.
    ``stages`` has node, stage, start (tz-aware), sorted or not."""
    accounts = accounts or load_accounts()
    at = pd.Timestamp(at)
    st = stages.loc[stages["start"].notna() & (stages["start"] <= at), ["node", "stage", "start"]]
    st = st.sort_values(["node", "start"], kind="stable").reset_index(drop=True)
    # the next stay's start, before the cut: a stay that began before ``at`` and ends after it
    # (or has not ended) counts up to ``at``
    end = st.groupby("node", sort=False)["start"].shift(-1)
    st["end"] = end.where(end.notna(), at).clip(upper=at)
    st["hours"] = (st["end"] - st["start"]).dt.total_seconds() / 3600.0
    codes = {s: _account(s, accounts) for s in st["stage"].unique()}
    st["account"] = st["stage"].map(codes)
    return st[["node", "stage", "account", "start", "end", "hours"]]


def _failed_burnin_hours(iv: pd.DataFrame) -> pd.Series:
    """Hours per node of burn-in stretches that went straight to quarantine."""
    if iv.empty:
        return pd.Series(dtype=float)
    acc = iv["account"]
    node = iv["node"]
    # a stretch: consecutive stays of one node in one account
    new = (acc != acc.shift()) | (node != node.shift())
    stretch = new.cumsum()
    per = iv.groupby(stretch, sort=False).agg(node=("node", "first"), account=("account", "first"),
                                              hours=("hours", "sum"))
    nxt = per["account"].shift(-1).where(per["node"].shift(-1) == per["node"])
    failed = per[(per["account"] == "burnin") & (nxt == "quarantine")]
    return failed.groupby("node")["hours"].sum()


def node_ledger(nodes: pd.DataFrame, stages: pd.DataFrame, at: pd.Timestamp, gpu_hour_usd: float,
                accounts: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per node (nodes without history are all zeros): hours per account,
    GPU-hours, failed burn-in GPU-hours, hours from planned to first serving, accepted, cost."""
    iv = intervals(stages, at, accounts)
    hours = iv.groupby(["node", "account"])["hours"].sum().unstack("account", fill_value=0.0) \
        if not iv.empty else pd.DataFrame()
    out = nodes.set_index("node")[["site", "rack", "pool", "gpus"]].copy()
    for a in (*ACCOUNTS, UNKNOWN):
        out[f"{a}_h"] = hours[a].reindex(out.index).fillna(0.0) if a in hours else 0.0
    gpus = out["gpus"].astype(float)
    out["gpu_h"] = out[HOURS].sum(axis=1) * gpus
    for a in ACCOUNTS:
        out[f"{a}_gpu_h"] = out[f"{a}_h"] * gpus
    out["bringup_gpu_h"] = out["gpu_h"] - out["serving_gpu_h"]
    out["failed_burnin_gpu_h"] = _failed_burnin_hours(iv).reindex(out.index).fillna(0.0) * gpus
    # from the first stage on record (normally planned) to the first hour serving: a node
    # quarantined and re-burned on the way counts the whole way
    first = iv.groupby("node")["start"].min()
    serving = iv[iv["account"] == "serving"].groupby("node")["start"].min()
    out["planned_to_serving_h"] = ((serving - first).dt.total_seconds() / 3600.0).reindex(out.index)
    out["accepted"] = out["planned_to_serving_h"].notna()
    out["total_cost_usd"] = out["gpu_h"] * gpu_hour_usd
    out["bringup_cost_usd"] = out["bringup_gpu_h"] * gpu_hour_usd
    return out


def pool_ledger(per_node: pd.DataFrame) -> pd.DataFrame:
    """One row per pool and a last row ``all``: nodes, accepted, hours and GPU-hours by
    account, failed burn-in GPU-hours, median planned-to-serving hours, total and
    bring-up cost, and the effective cost per accepted node."""
    sums = ["gpus", *HOURS, "gpu_h", *(f"{a}_gpu_h" for a in ACCOUNTS), "bringup_gpu_h", "failed_burnin_gpu_h", "total_cost_usd",
            "bringup_cost_usd"]

    def roll(df: pd.DataFrame) -> dict:
        row = {"nodes": len(df), "accepted": int(df["accepted"].sum()), **{c: float(df[c].sum()) for c in sums}}
        row["planned_to_serving_h"] = df["planned_to_serving_h"].median()  # NaN: none served yet
        row["cost_per_accepted_usd"] = row["total_cost_usd"] / row["accepted"] if row["accepted"] else float("nan")
        return row
    pools = per_node["pool"].astype(str)
    rows = {p: roll(df) for p, df in per_node.groupby(pools, sort=True)}
    rows["all"] = roll(per_node)
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "pool"
    return out
