"""In-memory object store with the API server's consistency rules.

Every write bumps one cluster-wide ``resourceVersion`` counter (as etcd's revision does)
and stamps it on the object; an update or patch that carries a stale
``metadata.resourceVersion`` is refused with 409 Conflict. Lists carry the current
counter. The store can snapshot itself to a JSON file so the lab survives restarts.

``metadata.finalizers`` are honoured for every resource, as by the real server's generic
registry: deleting an object that has finalizers only sets ``metadata.deletionTimestamp``
(once), and the object goes when an update leaves it with none; an object being deleted
keeps its deletionTimestamp and may get no new finalizer.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from .resources import Resource


class ApiStatus(Exception):
    """An API error answered as a ``Status`` object."""

    REASONS: ClassVar[dict[int, str]] = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
               405: "MethodNotAllowed", 409: "Conflict", 415: "UnsupportedMediaType",
               422: "Invalid", 429: "TooManyRequests", 500: "InternalError"}

    def __init__(self, code: int, message: str, *, reason: str = "", details: dict | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or self.REASONS.get(code, "Unknown")
        self.details = details

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            out["details"] = self.details
        return out


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def not_found(res: Resource, name: str) -> ApiStatus:
    what = f"{res.plural}.{res.group}" if res.group else res.plural
    return ApiStatus(404, f'{what} "{name}" not found',
                     details={"name": name, "group": res.group, "kind": res.plural})


Key = tuple[str, str, str]  # (group/plural, namespace, name)


def _rkey(res: Resource) -> str:
    return f"{res.group}/{res.plural}"


class Store:
    def __init__(self, snapshot: Path | None = None) -> None:
        self.lock = threading.RLock()
        self.objects: dict[Key, dict[str, Any]] = {}
        self.rv = 0
        self.snapshot = snapshot
        #: called with (resource, old, new) after every write, under the lock
        self.hooks: list[Callable[[Resource, dict | None, dict | None], None]] = []
        if snapshot and snapshot.exists():
            data = json.loads(snapshot.read_text())
            self.rv = int(data.get("resourceVersion", 0))
            for item in data.get("objects", []):
                self.objects[(item["key"][0], item["key"][1], item["key"][2])] = item["object"]

    # --- persistence ---------------------------------------------------------------
    def save(self) -> None:
        if not self.snapshot:
            return
        data = {"resourceVersion": self.rv,
                "objects": [{"key": list(k), "object": v} for k, v in self.objects.items()]}
        # the snapshot holds Secrets (bootstrap tokens): ours alone, from the first byte
        tmp = self.snapshot.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(data))
        os.replace(tmp, self.snapshot)
        os.chmod(self.snapshot, 0o600)  # a snapshot left 0644 by an older lab

    # --- primitives ----------------------------------------------------------------
    def _bump(self, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)

    def _emit(self, res: Resource, old: dict | None, new: dict | None) -> None:
        for hook in self.hooks:
            hook(res, old, new)

    def get(self, res: Resource, namespace: str, name: str) -> dict[str, Any]:
        with self.lock:
            obj = self.objects.get((_rkey(res), namespace, name))
            if obj is None:
                raise not_found(res, name)
            return copy.deepcopy(obj)

    def find(self, res: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            obj = self.objects.get((_rkey(res), namespace, name))
            return copy.deepcopy(obj) if obj else None

    def list(self, res: Resource, namespace: str | None,
             pred: Callable[[dict[str, Any]], bool] = lambda o: True) -> tuple[list[dict[str, Any]], str]:
        with self.lock:
            items = [copy.deepcopy(o) for (rk, ns, _), o in sorted(self.objects.items())
                     if rk == _rkey(res) and (namespace is None or ns == namespace) and pred(o)]
            return items, str(self.rv)

    def create(self, res: Resource, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)  # never keep (and later mutate) the caller's dict
        with self.lock:
            meta = obj.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            name = meta.get("name")
            if not name:
                raise ApiStatus(422, f"{res.kind} is invalid: metadata.name: Required value: name or "
                                     "generateName is required")
            if res.namespaced:
                meta["namespace"] = namespace
            else:
                meta.pop("namespace", None)
            key = (_rkey(res), namespace if res.namespaced else "", name)
            if key in self.objects:
                what = f"{res.plural}.{res.group}" if res.group else res.plural
                raise ApiStatus(409, f'{what} "{name}" already exists', reason="AlreadyExists",
                                details={"name": name, "group": res.group, "kind": res.plural})
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            meta.pop("resourceVersion", None)
            self._bump(obj)
            self.objects[key] = obj
            self._emit(res, None, obj)
            self.save()
            return copy.deepcopy(self.objects[key])

    def replace(self, res: Resource, namespace: str, name: str, obj: dict[str, Any],
                *, check_rv: bool = True) -> dict[str, Any]:
        """PUT semantics: identity fields are kept; a stale resourceVersion is a 409."""
        obj = copy.deepcopy(obj)
        with self.lock:
            key = (_rkey(res), namespace if res.namespaced else "", name)
            cur = self.objects.get(key)
            if cur is None:
                raise not_found(res, name)
            meta = obj.setdefault("metadata", {})
            if meta.get("name", name) != name:
                raise ApiStatus(400, f"the name of the object ({meta.get('name')}) does not match the name on "
                                     f"the URL ({name})")
            sent_rv = meta.get("resourceVersion")
            if check_rv and sent_rv and sent_rv != cur["metadata"]["resourceVersion"]:
                what = f"{res.plural}.{res.group}" if res.group else res.plural
                raise ApiStatus(409, f'Operation cannot be fulfilled on {what} "{name}": the object has been '
                                     "modified; please apply your changes to the latest version and try again",
                                details={"name": name, "group": res.group, "kind": res.plural})
            for k in ("name", "uid", "creationTimestamp", "namespace", "deletionTimestamp",
                      "deletionGracePeriodSeconds"):
                if k in cur["metadata"]:
                    meta[k] = cur["metadata"][k]
                elif k.startswith("deletion"):
                    meta.pop(k, None)  # only a delete sets them
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
            if meta.get("deletionTimestamp"):
                added = [f for f in meta.get("finalizers") or [] if f not in (cur["metadata"].get("finalizers") or [])]
                if added:
                    raise ApiStatus(422, f'{res.kind} "{name}" is invalid: metadata.finalizers: Forbidden: no new '
                                         f"finalizers can be added if the object is being deleted, found new "
                                         f"finalizers {added}")
                if not meta.get("finalizers"):  # the last one removed: the pending delete completes
                    return self._remove(res, key, obj)
            self._bump(obj)
            self.objects[key] = obj
            self._emit(res, cur, obj)
            self.save()
            return copy.deepcopy(obj)

    def delete(self, res: Resource, namespace: str, name: str, *, force: bool = False) -> dict[str, Any]:
        """Delete an object; one with finalizers is only marked (``deletionTimestamp``)
        and returned, unless ``force`` (what a CRD's deletion does to its objects)."""
        with self.lock:
            key = (_rkey(res), namespace if res.namespaced else "", name)
            cur = self.objects.get(key)
            if cur is None:
                raise not_found(res, name)
            if cur["metadata"].get("finalizers") and not force:
                if cur["metadata"].get("deletionTimestamp"):
                    return copy.deepcopy(cur)  # already being deleted: nothing changes
                obj = copy.deepcopy(cur)
                obj["metadata"].update(deletionTimestamp=now_rfc3339(), deletionGracePeriodSeconds=0)
                self._bump(obj)
                self.objects[key] = obj
                self._emit(res, cur, obj)
                self.save()
                return copy.deepcopy(obj)
            return self._remove(res, key, cur)

    def _remove(self, res: Resource, key: Key, cur: dict[str, Any]) -> dict[str, Any]:
        self.objects.pop(key, None)
        self.rv += 1
        self._emit(res, cur, None)
        self.save()
        return cur
