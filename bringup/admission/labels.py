"""Node-pool labels and the quarantine taint: pure policy, no I/O.

An admitted node carries labels that schedulers and operators select on:

=============================  ===============================================
``bringup.io/accelerator``     the SKU's accelerator, e.g. ``h100-80gb``
``bringup.io/topology``        e.g. ``8gpu-sxm-nvlink``
``bringup.io/fabric``          compute fabric of the pool, e.g. ``ib-ndr400``
``bringup.io/workload``        training | inference | batch
``bringup.io/sharing``         exclusive | mig | time-slicing
``bringup.io/pool``            the node pool's name
``bringup.io/burnin-status``   verdict of the last burn-in, e.g. ``passed``
``bringup.io/burnin-date``     date of that burn-in, ``YYYY-MM-DD``
``nvidia.com/gpu.count``       GPU Feature Discovery's labels, set up front so
``nvidia.com/gpu.product``     workloads can select before GFD runs (GFD later
``nvidia.com/gpu.memory``      writes the same values; only for exclusive pools:
                               under MIG or time-slicing GFD's values are the
                               shares', and GFD's to write)
``bringup.io/rack``            the node's NetBox rack; with ``block`` and
``bringup.io/block``           ``kubernetes.io/hostname`` the levels of the
                               Kueue ``Topology`` (:mod:`bringup.admission.kueue`);
                               block is the rack's NetBox location
=============================  ===============================================

(``rack`` and ``block`` are the keys the Kueue manifests select on: a node without its
rack label would be left out of the pool's topology; block is set when NetBox gives the
rack a location.)

Every value is checked against the Kubernetes label-value syntax; a bad one is a
:class:`~bringup.errors.ConfigError` naming the label, never a half-labelled node.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from bringup.admission.pool import Pool
from bringup.errors import ConfigError
from bringup.sku import SkuSpec

PREFIX = "bringup.io"
QUARANTINE_KEY = f"{PREFIX}/quarantine"
POOL_LABEL = f"{PREFIX}/pool"
RACK_LABEL = f"{PREFIX}/rack"
BLOCK_LABEL = f"{PREFIX}/block"
HOSTNAME_LABEL = "kubernetes.io/hostname"  # set by the kubelet, the lowest topology level
REASON_ANNOTATION = f"{PREFIX}/reason"

# label values: at most 63 characters, alphanumerics plus '-', '_' and '.', starting and
# ending with an alphanumeric (k8s.io/apimachinery validation.IsValidLabelValue)
_VALUE_RE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$")
_NAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
_DNS1123_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None when it is."""
    if len(value) > 63:
        return f"is {len(value)} characters long; label values are at most 63"
    if not _VALUE_RE.match(value):
        return ("must consist of alphanumerics, '-', '_' or '.', and begin and end with an "
                "alphanumeric character")
    return None


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label key (``[prefix/]name``), or None when it is."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix)):
        return f"prefix {prefix!r} must be a DNS subdomain (lower-case, at most 253 characters)"
    if not _NAME_RE.match(name):
        return (f"name {name!r} must be 1-63 alphanumerics, '-', '_' or '.', beginning and ending "
                "with an alphanumeric")
    return None


def validate_labels(labels: Mapping[str, str], *, allow_empty: bool = False) -> dict[str, str]:
    """Check every key and value; raise one ConfigError listing each bad label."""
    problems = []
    for key, value in labels.items():
        if (p := label_key_problem(key)) is not None:
            problems.append(f"label key {key!r}: {p}")
        if not isinstance(value, str):
            problems.append(f"label {key}: value {value!r} is not a string")
        elif not value and not allow_empty:
            problems.append(f"label {key}: value is empty")
        elif (p := label_value_problem(value)) is not None:
            problems.append(f"label {key}: value {value!r} {p}")
    if problems:
        raise ConfigError("invalid Kubernetes labels: " + "; ".join(problems),
                          hint="fix the SKU config context, the fleet pool or the burn-in record they "
                               "come from")
    return dict(labels)


def gpu_product_label(model: str) -> str:
    """GPU Feature Discovery's ``gpu.product`` form: the NVML name, spaces as dashes."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", model.strip().replace(" ", "-"))


def _date(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value[:10]).isoformat()
        except ValueError:
            pass
    raise ConfigError(f"label {PREFIX}/burnin-date: {value!r} is not a date (YYYY-MM-DD)",
                      hint="pass the burn-in's finish date")


def node_labels(sku: SkuSpec, pool: Pool, facts: Mapping[str, Any], burnin: Mapping[str, Any], *,
                pool_name: str, rack: str = "", block: str = "") -> dict[str, str]:
    """The labels an admitted node gets.

    ``facts`` are observed values that take precedence over the SKU's expectations when
    present (``gpu_count``, ``gpu_product``, ``gpu_memory_mib``); ``burnin`` holds
    ``status`` and ``date`` of the burn-in the admission is based on.
    """
    if "status" not in burnin or "date" not in burnin:
        raise ConfigError("burn-in record needs 'status' and 'date' to label a node",
                          hint="admit a node only from a complete burn-in verdict")
    labels = {
        f"{PREFIX}/accelerator": sku.accelerator,
        f"{PREFIX}/topology": sku.topology,
        f"{PREFIX}/fabric": pool.fabric,
        f"{PREFIX}/workload": pool.workload,
        f"{PREFIX}/sharing": pool.sharing,
        f"{PREFIX}/pool": pool_name,
        f"{PREFIX}/burnin-status": str(burnin["status"]),
        f"{PREFIX}/burnin-date": _date(burnin["date"]),
    }
    if pool.sharing == "exclusive":
        # under MIG or time-slicing GFD's count, product and memory are the shares'
        # (<product>-SHARED, <product>-MIG-<profile>, a MIG device's memory): GFD writes
        # them, the gate checks them
        labels["nvidia.com/gpu.count"] = str(facts.get("gpu_count", sku.gpu.count))
        labels["nvidia.com/gpu.product"] = gpu_product_label(str(facts.get("gpu_product", sku.gpu.model)))
        labels["nvidia.com/gpu.memory"] = str(facts.get("gpu_memory_mib", sku.gpu.memory_mib))
    labels.update({k: v for k, v in ((RACK_LABEL, rack), (BLOCK_LABEL, block)) if v})
    return validate_labels(labels)


class Taint(BaseModel):
    """A node taint (``key=value:effect``)."""

    model_config = ConfigDict(frozen=True)

    key: str
    value: str = ""
    effect: str

    def to_api(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"


def quarantine_taint(reason_code: str) -> Taint:
    """``bringup.io/quarantine=<code>:NoSchedule``; the code must be a valid label value."""
    problem = label_value_problem(reason_code) if reason_code else "is empty"
    if problem:
        raise ConfigError(f"taint {QUARANTINE_KEY}: reason code {reason_code!r} {problem}",
                          hint="use a short code such as xid-79 (see reason_code())")
    return Taint(key=QUARANTINE_KEY, value=reason_code, effect="NoSchedule")


def reason_code(reason: str, limit: int = 40) -> str:
    """A short taint-value code from a free-text reason: its head before ':' slugified,
    e.g. ``"XID 79 on GPU 2: fell off the bus"`` -> ``xid-79-on-gpu-2``."""
    head = reason.split(":", 1)[0]
    slug = re.sub(r"[^a-z0-9]+", "-", head.lower()).strip("-")[:limit].strip("-")
    return slug or "unspecified"
