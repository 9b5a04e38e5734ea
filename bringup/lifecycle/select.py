"""Which nodes a run takes: by site, rack, NetBox tag or names; and which active nodes
are due for re-burn-in. Read-only."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bringup.context import Context
from bringup.errors import ConfigError
from bringup.lifecycle.engine import REBURNIN_TAG, State, parse_state


@dataclass
class Selected:
    name: str
    rack: str
    stage: str
    last_burnin: str = ""


def _default_site(ctx: Context, site, rack, tag, names):
    """With no selection at all, the settings' site is meant."""
    return site or (None if (rack or tag or names) else ctx.settings.site or None)


def select(ctx: Context, *, site=None, rack=None, tag=None, names=None, status=None) -> list[Selected]:
    site = _default_site(ctx, site, rack, tag, names)
    if not any((site, rack, tag, names)):
        raise ConfigError("select nodes by site, rack, tag or names", hint="e.g. site=lab-east")
    return [Selected(r.name, r.rack, r.stage, str(r.custom_fields.get("burnin_last") or ""))
            for r in ctx.netbox.nodes(site=site, rack=rack, tag=tag, names=names, status=status)]


def due_for_reburnin(ctx: Context, *, site=None, rack=None, tag=None, names=None,
                     max_age_days: int = 30, now: datetime | None = None) -> list[Selected]:
    """Active nodes whose last burn-in is older than ``max_age_days`` or that carry the
    re-burn-in tag, and tagged nodes a re-burn-in already took out of service (the health
    watch drained them, or a run stopped half-way): they resume where they are.
    Quarantined nodes are not picked: they wait for an operator."""
    now = now or datetime.now(UTC)
    out = []
    for rec in ctx.netbox.nodes(site=_default_site(ctx, site, rack, tag, names), rack=rack, tag=tag, names=names):
        state = parse_state(rec.stage)
        if state in (State.DRAINING, State.PROVISIONED, State.BURNED_IN, State.VALIDATING) and REBURNIN_TAG in rec.tags:
            out.append(Selected(rec.name, rec.rack, rec.stage, str(rec.custom_fields.get("burnin_last") or "")))
            continue
        if state != State.ACTIVE:
            continue
        last = rec.custom_fields.get("burnin_last")
        stale = True
        if last:
            try:
                stale = now - datetime.fromisoformat(str(last)) > timedelta(days=max_age_days)
            except ValueError:
                stale = True  # unparseable date: burn in again rather than trust it
        if stale or REBURNIN_TAG in rec.tags:
            out.append(Selected(rec.name, rec.rack, rec.stage, str(last or "")))
    return out
