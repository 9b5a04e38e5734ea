"""Global concurrency limits of the flows: names, defaults, and their creation.

Tasks take slots with ``prefect.concurrency.sync.concurrency`` (which waits, so runs
queue rather than fail); limits are upserted here so an operator can resize them in the
UI or with ``prefect gcl update`` and bringup never shrinks them back silently.
"""

from __future__ import annotations

from prefect.client.orchestration import get_client

BMC_LIMIT = "bmc-sessions"
INSTALL_LIMIT = "os-installs"
BURNIN_PER_RACK = 2
DEFAULT_LIMITS = {INSTALL_LIMIT: 8, BMC_LIMIT: 32}


def burnin_limit(rack: str) -> str:
    return f"burnin-rack-{rack}"


def ensure_limits(limits: dict[str, int], *, overwrite: bool = True) -> list[str]:
    """Create missing limits; with ``overwrite`` also resize existing ones. Returns the
    names created."""
    created = []
    with get_client(sync_client=True) as client:
        for name, limit in limits.items():
            try:
                client.read_global_concurrency_limit_by_name(name)
                exists = True
            except Exception:
                exists = False
            if not exists:
                created.append(name)
            if overwrite or not exists:
                client.upsert_global_concurrency_limit_by_name(name, limit)
    return created


def ensure_rack_limits(racks: list[str]) -> list[str]:
    """Burn-in limits for the racks of a run; existing ones keep their operator-set size."""
    return ensure_limits({burnin_limit(r): BURNIN_PER_RACK for r in sorted(set(racks))}, overwrite=False)
