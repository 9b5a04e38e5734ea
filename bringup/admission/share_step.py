"""Step ``share`` (state validating, before ``join``): the pool's GPU sharing mode applied
on the node and read back (issue #28, item 4).

After the burn-in and the fabric test (they need whole GPUs), the node is set up the way
its pool hands out GPUs (:mod:`bringup.admission.sharing`):

- MIG: every GPU cut by the pool's geometry through NVML on the node (the agent's
  ``sharing`` command: MIG mode on, instances created, read back), and the device
  plugin's ``migStrategy``;
- time-slicing: MIG off, the device plugin's ``sharing.timeSlicing`` (replicas);
- exclusive: MIG off, the plain device plugin config.

The device plugin's config goes to the file the settings name (``device_plugin_config``),
which the node's plugin reads (``--config-file``). A GPU whose MIG mode stays pending, or
whose instances read back different from the geometry, fails the step with NVML's words:
the node is not admitted. What the node then advertises (resources, GPU Feature Discovery
labels) is the readiness gate's to judge (:func:`bringup.admission.sharing.judge_sharing`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bringup.admission.pool import pool_of
from bringup.admission.sharing import (
    Mig,
    SharingMode,
    TimeSlicing,
    render_device_plugin_sharing,
    sharing_mode,
)
from bringup.context import Context
from bringup.errors import ConfigError, ParseError
from bringup.lifecycle.results import Evidence, StepResult
from bringup.netbox.adapter import NodeRecord


def pool_mode(rec: NodeRecord) -> tuple[str, SharingMode]:
    """The node's pool name and its sharing mode for the node's SKU; a pool NetBox holds
    wrong is a ConfigError naming the field (``bringup_pool.time_slicing.replicas``)."""
    name, parsed = pool_of(rec.pool)
    return name, sharing_mode(parsed, rec.sku, source=f"pool {name} (NetBox config context)")


def device_plugin_config(mode: SharingMode) -> dict[str, Any]:
    """The NVIDIA device plugin's config file (``version: v1``) for ``mode``: ``flags.migStrategy``
    (``none`` without MIG) and, for time-slicing, ``sharing.timeSlicing``."""
    doc = render_device_plugin_sharing(mode) if isinstance(mode, TimeSlicing) else {"version": "v1"}
    doc["flags"] = {"migStrategy": mode.strategy if isinstance(mode, Mig) else "none"}
    return doc


def applied_problems(mode: SharingMode, doc: Mapping[str, Any]) -> list[str]:
    """What the agent's document says did not take: one line per GPU (never empty when
    the document is not one the step understands)."""
    if doc.get("error"):
        return [f"setting GPU sharing failed: {doc['error']}"]
    gpus = doc.get("gpus")
    if not isinstance(gpus, list) or not gpus:
        return ["the sharing document lists no GPUs"]
    want = dict(mode.profiles) if isinstance(mode, Mig) else {}
    problems = []
    for g in gpus:
        if not isinstance(g, dict):
            problems.append(f"a GPU entry of the sharing document is not an object: {g!r}")
            continue
        where = f"GPU {g.get('index', '?')}"
        if g.get("error"):
            problems.append(f"{where}: {g['error']}")
        elif g.get("current") != (1 if want else 0):
            problems.append(f"{where}: MIG mode reads {g.get('current')!r} after the change "
                            f"(wanted {'enabled' if want else 'disabled'})")
        elif (g.get("instances") or {}) != want:
            problems.append(f"{where}: MIG instances read back {g.get('instances')}, wanted {want or 'none'}")
    return problems


def share(ctx: Context, rec: NodeRecord, params: Mapping[str, Any]) -> StepResult:
    from bringup.provision.ansible_steps import run_sharing

    try:
        pool_name, mode = pool_mode(rec)
    except ParseError as exc:
        # the pool's data is wrong, not the node: held with the field to fix (a ConfigError
        # is a controller fault), never quarantined for it
        raise ConfigError(f"GPU sharing: {exc}", hint=exc.hint or "fix the pool's bringup_pool config context") from None
    config = device_plugin_config(mode)
    doc = run_sharing(rec.name, ctx.host(rec)[rec.name], dict(mode.profiles) if isinstance(mode, Mig) else None,
                      json.dumps(config, indent=2, sort_keys=True), ctx.ssh_access(),
                      config_path=ctx.settings.device_plugin_config)
    evidence = {"pool": pool_name, "mode": mode.describe(), "device_plugin_config": config, "node": doc}
    problems = applied_problems(mode, doc)
    if problems:
        text = "\n".join(f"- {p}" for p in problems)
        return StepResult(node=rec.name, step="share", ok=False, summary=f"GPU sharing did not take: {mode.describe()}",
                          reasons=[f"GPU sharing ({mode.describe()}): {p}" for p in problems],
                          evidence=[Evidence(kind="sharing", document=evidence, style="danger",
                                             summary=f"## GPU sharing did not take: {mode.describe()}\n\n{text}")])
    what = "MIG off" if not isinstance(mode, Mig) else f"{len(doc['gpus'])} GPU(s) cut and read back"
    return StepResult(node=rec.name, step="share", ok=True, summary=f"GPU sharing set: {mode.describe()} ({what})",
                      evidence=[Evidence(kind="sharing", document=evidence, style="success",
                                         summary=f"GPU sharing set for pool {pool_name}: {mode.describe()} ({what}); "
                                                 f"device plugin migStrategy {config['flags']['migStrategy']}")])


__all__ = ["applied_problems", "device_plugin_config", "pool_mode", "share"]
