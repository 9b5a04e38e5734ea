"""A quarantined GPU in NetBox (issue #27 item 3): one inventory item on the node's device.

bringup may take one bad GPU of a serving node out of service (a fatal XID on that device,
a row-remap failure) instead of draining the node. NetBox keeps GPUs as custom fields of
the device (``gpu_serials``), not as objects, so a quarantined GPU becomes an inventory item
of the device:

============  ============================================================================
name          ``GPU <index>`` (the NVML index: what the agent, the watch and the device
              plugin call that GPU)
status        ``failed`` while quarantined, ``active`` once released
serial        the GPU's serial as NVML reports it, when the caller knows it
description   the short reason (NetBox keeps 200 characters)
tags          :data:`TAG` while quarantined
custom field  :data:`FINDING_FIELD`: the finding's code (``xid-79``, ``row-remap``...);
              inventory items have no comments field
============  ============================================================================

NetBox 4.7 facts this relies on (``dcim/models/device_components.py``,
``dcim/choices.py``, ``netbox/api/pagination.py`` of the release): ``InventoryItem.status``
takes ``InventoryItemStatusChoices`` (offline, active, planned, staged, failed,
decommissioning); an inventory item's change is logged with its device as the related
object, so it shows in the device's change log; its uniqueness is (device, parent, name),
which NetBox does not enforce while ``parent`` is empty, so at most one item per GPU is kept
by reading before creating (a node's writers are one run at a time: its lease); a list
read with ``start`` pages by id, the cheap way (no count), and its ``next`` link carries the
next ``start`` even when ``MAX_PAGE_SIZE`` cut the page short.

A released GPU is kept, ``active`` and untagged, rather than deleted: the item stands for
a piece of hardware that is still in the node, its change log (who quarantined it, when,
why, and the release) stays attached to a live object, and the next quarantine of the same
GPU updates it. Which serial the record holds comes from the caller: the device's
``gpu_serials`` are in the BMC's order, not NVML's, so its n-th entry is not GPU n.

Every request goes through the adapter (:meth:`~bringup.netbox.adapter.NetBox._raw` and its
error map): nothing here opens a connection of its own.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from bringup.errors import NetBoxRequestError
from bringup.netbox.devices import choice_value
from bringup.netbox.status_map import guard as _guard

if TYPE_CHECKING:
    from bringup.netbox.adapter import NetBox

log = logging.getLogger(__name__)

#: the tag of a quarantined GPU's item (netbox/schema.yaml creates it)
TAG = "bringup-gpu-quarantine"
#: the inventory item custom field holding the finding's code (netbox/schema.yaml)
FINDING_FIELD = "bringup_gpu_finding"
#: InventoryItemStatusChoices of NetBox 4.7 (dcim/choices.py)
FAILED, ACTIVE = "failed", "active"
ITEMS = "dcim/inventory-items/"
#: what a read asks NetBox to serialize (``?fields=``): a device's nested form carries its name
READ = ("id", "device", "name", "status", "serial", "description", "tags", "custom_fields")
#: lengths of NetBox's columns (ComponentModel.description, InventoryItem.serial)
DESCRIPTION_MAX, SERIAL_MAX = 200, 50
#: device ids a list request names: keeps the URL well under any proxy's limit
CHUNK = 100
#: items a page asks for (NetBox caps it at its MAX_PAGE_SIZE; the ``next`` link says so)
PAGE = 500

_NAME = re.compile(r"\s*gpu\s*(\d+)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class GpuRecord:
    """One GPU's quarantine record as NetBox holds it."""

    device_id: int
    node: str
    index: int
    serial: str
    status: str
    reason: str
    code: str = ""
    item_id: int | None = None


# --- pure: names, bodies, records ---------------------------------------------------------
def item_name(index: int) -> str:
    """The inventory item's name of GPU ``index`` (its NVML index)."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"a GPU index is a number from 0, not {index!r}")
    return f"GPU {index}"


def gpu_index(name: Any) -> int | None:
    """The NVML index in an item's name (``GPU 3`` -> 3); ``None`` when it names none.
    Lenient on case and spaces: an operator may have typed ``gpu3``."""
    m = _NAME.fullmatch(str(name or ""))
    return int(m.group(1)) if m else None


def short(text: str, limit: int = DESCRIPTION_MAX) -> str:
    """``text`` on one line, cut to NetBox's column (it refuses longer, it does not cut)."""
    one = " ".join(str(text or "").split())
    return one if len(one) <= limit else one[:limit - 1] + "…"


def usable_serial(serial: str) -> str:
    """``serial`` as NetBox can store it, ``""`` when it cannot: a serial cut short would
    name another GPU, so one too long is left out (and said so)."""
    s = str(serial or "").strip()
    if len(s) > SERIAL_MAX:
        log.warning("GPU serial %r is longer than NetBox keeps (%d); not recorded", s, SERIAL_MAX)
        return ""
    return s


def _slugs(item: dict[str, Any]) -> list[str]:
    return [str(t.get("slug")) if isinstance(t, dict) else str(t) for t in item.get("tags") or []]


def _tags(slugs: Iterable[str]) -> list[dict[str, str]]:
    return [{"slug": s} for s in sorted(set(slugs))]


def create_body(device_id: int, index: int, *, reason: str, code: str, serial: str = "") -> dict[str, Any]:
    """The POST of a new quarantined GPU's item."""
    body: dict[str, Any] = {"device": device_id, "name": item_name(index), "status": FAILED,
                            "description": short(reason), "tags": _tags([TAG]),
                            "custom_fields": {FINDING_FIELD: code or None}}
    if usable_serial(serial):
        body["serial"] = usable_serial(serial)
    return body


def failed_changes(item: dict[str, Any], *, reason: str, code: str, serial: str = "") -> dict[str, Any]:
    """What a PATCH must change to make an existing item a quarantined GPU; ``{}`` when it
    already is one (then nothing is written: no change log entry for a repeat). A serial the
    caller does not know leaves the recorded one as it is."""
    body: dict[str, Any] = {}
    if choice_value(item.get("status")) != FAILED:
        body["status"] = FAILED
    if (item.get("description") or "") != short(reason):
        body["description"] = short(reason)
    if ((item.get("custom_fields") or {}).get(FINDING_FIELD) or None) != (code or None):
        body["custom_fields"] = {FINDING_FIELD: code or None}
    if TAG not in _slugs(item):
        body["tags"] = _tags([*_slugs(item), TAG])
    serial = usable_serial(serial)
    if serial and serial != (item.get("serial") or ""):
        body["serial"] = serial
    return body


def release_changes(item: dict[str, Any], *, note: str, serial: str = "") -> dict[str, Any]:
    """The PATCH that releases a quarantined GPU's item: ``active``, untagged, the finding
    cleared (the change log keeps what it was), the note as its description. ``serial``: a
    replacement GPU's, when the repair swapped it."""
    body: dict[str, Any] = {"status": ACTIVE, "description": short(f"released: {note}"),
                            "custom_fields": {FINDING_FIELD: None},
                            "tags": _tags(s for s in _slugs(item) if s != TAG)}
    serial = usable_serial(serial)
    if serial and serial != (item.get("serial") or ""):
        body["serial"] = serial
    return body


def quarantined(item: dict[str, Any]) -> bool:
    """Is this item a GPU bringup holds quarantined (failed *and* tagged)? A failed item
    an operator entered without the tag is theirs, not bringup's to release."""
    return choice_value(item.get("status")) == FAILED and TAG in _slugs(item)


def gpu_record(item: dict[str, Any], node: str = "") -> GpuRecord | None:
    """The record of an item as NetBox serializes it; ``None`` when its name holds no GPU
    index (a malformed item: the caller reports it)."""
    index = gpu_index(item.get("name"))
    if index is None:
        return None
    device = item.get("device")
    device_id = int(device["id"] if isinstance(device, dict) else device)
    name = device.get("name") if isinstance(device, dict) else None
    return GpuRecord(device_id=device_id, node=str(name or node), index=index, serial=str(item.get("serial") or ""),
                     status=str(choice_value(item.get("status")) or ""), reason=str(item.get("description") or ""),
                     code=str((item.get("custom_fields") or {}).get(FINDING_FIELD) or ""), item_id=item.get("id"))


def records_by_device(items: Iterable[dict[str, Any]], device_ids: list[int] | None = None
                      ) -> tuple[dict[int, list[GpuRecord]], list[str]]:
    """Quarantined GPUs by device id (each asked device present, ``[]`` when it has none),
    ordered by index, and the findings: items whose name holds no index, and a GPU held by
    more than one item (the lowest item id is the record)."""
    out: dict[int, list[GpuRecord]] = {int(i): [] for i in device_ids or []}
    findings: list[str] = []
    seen: dict[tuple[int, int], int | None] = {}
    for item in sorted(items, key=lambda i: int(i.get("id") or 0)):
        rec = gpu_record(item)
        device = item.get("device")
        where = device.get("name") if isinstance(device, dict) else device
        if rec is None:
            findings.append(f"inventory item #{item.get('id')} {item.get('name')!r} of {where} is tagged {TAG} "
                            f"but its name holds no GPU index ('GPU <n>'): skipped")
            continue
        if (rec.device_id, rec.index) in seen:
            findings.append(f"{where}: GPU {rec.index} has several quarantine items (#{seen[rec.device_id, rec.index]}"
                            f", #{rec.item_id}): the first counts; delete the others in NetBox")
            continue
        seen[rec.device_id, rec.index] = rec.item_id
        out.setdefault(rec.device_id, []).append(rec)
    for recs in out.values():
        recs.sort(key=lambda r: r.index)
    return out, findings


def chunks(ids: list[int] | None, size: int = CHUNK) -> Iterator[list[int] | None]:
    """The device id filters of a listing: ``None`` (no filter) for every device, else
    slices of ``size`` ids without repeats."""
    if ids is None:
        yield None
        return
    unique = list(dict.fromkeys(int(i) for i in ids))
    for n in range(0, len(unique), size):
        yield unique[n:n + size]


def next_start(doc: dict[str, Any], start: int) -> int | None:
    """The ``start`` of the page after ``doc`` (from its ``next`` link), ``None`` at the end.
    A link that would not move forward ends it too: a loop that never ends is worse."""
    link = doc.get("next")
    if not link:
        return None
    values = parse_qs(urlsplit(str(link)).query).get("start") or []
    nxt = int(values[0]) if values and values[0].isdigit() else None
    return nxt if nxt is not None and nxt > start else None


# --- NetBox, through the adapter --------------------------------------------------------
def _list(nb: NetBox, filters: dict[str, Any]) -> list[dict[str, Any]]:
    """Every item ``filters`` match, page by page in id order (cursor paging)."""
    items: list[dict[str, Any]] = []
    start: int | None = 0
    while start is not None:
        doc = nb._raw("GET", ITEMS, params={**filters, "fields": ",".join(READ), "start": start,
                                            "limit": PAGE}).json()
        items += doc.get("results") or []
        start = next_start(doc, start)
    return items


def _write(nb: NetBox, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A POST or PATCH of an item, answered with what :data:`READ` names. NetBox accepts only
    the fields ``?fields=`` lists, so every key of the body is in it."""
    fields = ",".join(dict.fromkeys([*READ, *body]))
    try:
        return nb._raw(method, path, json=body, params={"fields": fields}).json()
    except NetBoxRequestError as exc:
        said = str(exc.args[0] if exc.args else exc)
        if TAG in said or FINDING_FIELD in said:
            raise NetBoxRequestError(f"NetBox lacks bringup's GPU quarantine tag or field: {said}",
                                     hint="apply bringup's NetBox schema: `bringup netbox apply`") from None
        raise


def _find(nb: NetBox, device_id: int, index: int) -> dict[str, Any] | None:
    """The item of GPU ``index`` on the device (the lowest id when several), or ``None``."""
    items = _list(nb, {"device_id": device_id, "name": item_name(index)})
    return items[0] if items else None


@_guard
def mark_gpu_failed(nb: NetBox, device_id: int, node: str, index: int, *, reason: str, code: str,
                    serial: str = "") -> GpuRecord:
    """Record GPU ``index`` of the device as quarantined: its item created, or the one there
    updated (a second call for the same GPU never makes a second item; one that changes
    nothing writes nothing). One read, then at most one write."""
    item = _find(nb, device_id, index)
    if item is None:
        item = _write(nb, "POST", ITEMS, create_body(device_id, index, reason=reason, code=code, serial=serial))
        log.info("%s: GPU %d quarantined in NetBox (inventory item #%s): %s", node, index, item.get("id"), reason)
    else:
        body = failed_changes(item, reason=reason, code=code, serial=serial)
        if body:
            item = _write(nb, "PATCH", f"{ITEMS}{item['id']}/", body)
    rec = gpu_record(item, node)
    if rec is None:   # found by the name item_name() gives: only a NetBox that renamed it on the way
        raise NetBoxRequestError(f"{node}: NetBox holds GPU {index}'s item as {item.get('name')!r}",
                                 hint="rename the inventory item 'GPU <index>' in NetBox")
    return replace(rec, device_id=device_id, node=node or rec.node)


@_guard
def failed_gpus(nb: NetBox, device_ids: list[int] | None = None, *,
                findings: list[str] | None = None) -> dict[int, list[GpuRecord]]:
    """The quarantined GPUs of these devices (every device when ``None``), by device id,
    each asked device present. One list request per page and per :data:`CHUNK` devices,
    filtered by tag and status in NetBox. A malformed item is skipped and logged, and added
    to ``findings`` when given."""
    if device_ids is not None and not device_ids:
        return {}
    items: list[dict[str, Any]] = []
    for ids in chunks(device_ids):
        items += _list(nb, {"tag": TAG, "status": FAILED, **({"device_id": ids} if ids is not None else {})})
    out, found = records_by_device(items, device_ids)
    for f in found:
        log.warning("%s", f)
    if findings is not None:
        findings += found
    return out


@_guard
def release_gpu(nb: NetBox, device_id: int, index: int, *, note: str, serial: str = "") -> bool:
    """Release GPU ``index`` after repair or re-test: its item goes ``active``, untagged, with
    ``note`` as its description (kept, not deleted: see the module doc). ``serial``: a
    replacement's. False, writing nothing, when bringup does not hold that GPU quarantined."""
    item = _find(nb, device_id, index)
    if item is None or not quarantined(item):
        return False
    _write(nb, "PATCH", f"{ITEMS}{item['id']}/", release_changes(item, note=note, serial=serial))
    return True


__all__ = ["ACTIVE", "FAILED", "FINDING_FIELD", "TAG", "GpuRecord", "failed_gpus", "gpu_index", "item_name",
           "mark_gpu_failed", "records_by_device", "release_gpu"]
