"""CustomResourceDefinitions (``apiextensions.k8s.io/v1``): what the stand-in does once a
CRD is created, as the real apiextensions-apiserver does.

* Every version with ``served: true`` becomes a resource ``<group>/<version>/<plural>``
  (kind, singular, short names, categories, scope, the ``status`` subresource where the
  version names it, printer columns, selectable fields) in the server's :class:`Catalog`,
  so discovery lists it and ``kubectl get <plural>|<shortName>`` and ``kubectl apply`` find
  it. The versions share one object (conversion strategy ``None``: only ``apiVersion``
  changes).
* The CRD's status gets ``acceptedNames``, the ``NamesAccepted`` and ``Established``
  conditions and ``storedVersions``. Names are accepted as given: a clash of kinds or short
  names between two CRDs is not detected.
* A custom object is stored as given (no schema validation, no defaulting, no pruning),
  with the custom-resource strategy's rules: ``metadata.generation`` is 1 on create and
  counts changes outside ``metadata``; where the status subresource is on, a create or an
  update of the object leaves ``status`` alone (it is written through ``/status`` only).
* Deleting a CRD deletes its objects (finalizers not waited for) and unregisters it.
  Registered CRDs come back with the store's snapshot after a restart.

Facts from the Kubernetes docs ("Extend the Kubernetes API with CustomResourceDefinitions",
"Versions in CustomResourceDefinitions") and the ``apiextensions.k8s.io/v1`` API reference.
"""

from __future__ import annotations

import copy
from typing import Any

from . import controllers as ctl
from .resources import Catalog, Resource, find
from .store import ApiStatus, Store, now_rfc3339

CRDS = find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
_META_FIELDS = ("metadata.name", "metadata.namespace")
SCOPES = ("Namespaced", "Cluster")


def is_crds(res: Resource) -> bool:
    return (res.group, res.plural) == (CRDS.group, CRDS.plural)


def _invalid(name: str, field: str, detail: str) -> ApiStatus:
    return ApiStatus(422, f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: {field}: {detail}',
                     details={"name": name, "group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition"})


def validate(crd: dict[str, Any], old: dict[str, Any] | None = None) -> None:
    """The checks of the real validation the stand-in relies on (422 Invalid)."""
    name = (crd.get("metadata") or {}).get("name", "")
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    for field, value in (("spec.group", spec.get("group")), ("spec.names.plural", names.get("plural")),
                         ("spec.names.kind", names.get("kind"))):
        if not value:
            raise _invalid(name, field, "Required value")
    if name != f"{names['plural']}.{spec['group']}":
        raise _invalid(name, "metadata.name", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
    if spec.get("scope") not in SCOPES:
        raise _invalid(name, "spec.scope", f'Unsupported value: "{spec.get("scope")}": supported values: '
                                           '"Cluster", "Namespaced"')
    versions = spec.get("versions") or []
    if not versions or not all(isinstance(v, dict) and v.get("name") for v in versions):
        raise _invalid(name, "spec.versions", "Invalid value: must have exactly one version marked as storage "
                                              "version")
    if sum(1 for v in versions if v.get("storage")) != 1:
        raise _invalid(name, "spec.versions", "Invalid value: must have exactly one version marked as storage "
                                              "version")
    if old is not None:
        before = old.get("spec") or {}
        for field in ("group", "scope"):
            if spec.get(field) != before.get(field):
                raise _invalid(name, f"spec.{field}", "Invalid value: field is immutable")


def accepted_names(crd: dict[str, Any]) -> dict[str, Any]:
    """``spec.names`` with the defaults the server fills (singular, listKind)."""
    names = dict((crd.get("spec") or {}).get("names") or {})
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", f"{names['kind']}List")
    return names


def resources_of(crd: dict[str, Any]) -> list[Resource]:
    """The resources a (valid) CRD defines: one per served version."""
    spec = crd["spec"]
    names = accepted_names(crd)
    out = []
    for v in spec.get("versions") or []:
        if not v.get("served"):
            continue
        columns = tuple((c.get("name", ""), c.get("type", "string"), c.get("format", ""), c.get("description", ""),
                         int(c.get("priority") or 0), c.get("jsonPath", ""))
                        for c in v.get("additionalPrinterColumns") or [])
        selectable = {f["jsonPath"].lstrip(".") for f in v.get("selectableFields") or [] if f.get("jsonPath")}
        out.append(Resource(spec["group"], v["name"], names["plural"], names["kind"], spec["scope"] == "Namespaced",
                            tuple(names.get("shortNames") or ()), frozenset(set(_META_FIELDS) | selectable),
                            ("status",) if "status" in (v.get("subresources") or {}) else (),
                            crd=crd["metadata"]["name"], singular=names["singular"],
                            categories=tuple(names.get("categories") or ()), columns=columns))
    return out


def crd_status(crd: dict[str, Any], old_status: dict[str, Any] | None) -> dict[str, Any]:
    """The status the apiextensions controllers give a CRD whose names are accepted:
    ``NamesAccepted`` and ``Established`` True (their transition times kept once True),
    ``acceptedNames``, and ``storedVersions`` (every version ever marked for storage)."""
    old_status = old_status or {}
    before = {c.get("type"): c for c in old_status.get("conditions") or []}
    now = now_rfc3339()
    conditions = []
    for ctype, reason, message in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                   ("Established", "InitialNamesAccepted", "the initial names have been accepted")):
        prev = before.get(ctype)
        if prev and prev.get("status") == "True":
            conditions.append(prev)
        else:
            conditions.append({"type": ctype, "status": "True", "lastTransitionTime": now, "reason": reason,
                               "message": message})
    conditions += [c for t, c in before.items() if t not in ("NamesAccepted", "Established")]
    stored = list(old_status.get("storedVersions") or [])
    for v in crd["spec"]["versions"]:
        if v.get("storage") and v["name"] not in stored:
            stored.append(v["name"])
    return {"acceptedNames": accepted_names(crd), "conditions": conditions, "storedVersions": stored}


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """What counts for ``metadata.generation``: all but metadata and the type fields."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")}


def _keep_status(res: Resource, new: dict[str, Any], old: dict[str, Any] | None) -> None:
    """With the status subresource on, the object's own writes do not set status."""
    if "status" not in res.subresources:
        return
    if old is not None and "status" in old:
        new["status"] = copy.deepcopy(old["status"])
    else:
        new.pop("status", None)


def _generation(new: dict[str, Any], old: dict[str, Any] | None) -> None:
    meta = new.setdefault("metadata", {})
    if old is None:
        meta["generation"] = 1
        return
    gen = int((old.get("metadata") or {}).get("generation") or 1)
    meta["generation"] = gen + 1 if _content(new) != _content(old) else gen


class Crds:
    """The CRDs of one server: registers what each defines in ``catalog`` as CRDs are
    written (a store hook: it only reads), and admits CRDs and custom objects."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.catalog = Catalog()
        for crd in store.list(CRDS, None)[0]:  # those of a snapshot: served again after a restart
            self.catalog.register(crd["metadata"]["name"], resources_of(crd))
        store.hooks.append(self._on_write)

    def _on_write(self, res: Resource, old: dict | None, new: dict | None) -> None:
        if not is_crds(res):
            return
        if new is None:
            self.catalog.unregister((old or {}).get("metadata", {}).get("name", ""))
        else:
            self.catalog.register(new["metadata"]["name"], resources_of(new))

    def admit(self, res: Resource, obj: dict[str, Any]) -> None:
        """Defaults and checks of a new object (built-in ones: ``controllers.admit``)."""
        if is_crds(res):
            validate(obj)
            _generation(obj, None)
            obj["status"] = crd_status(obj, None)
        elif res.crd:
            _keep_status(res, obj, None)
            _generation(obj, None)
        else:
            ctl.admit(res.plural, obj)

    def admit_update(self, res: Resource, obj: dict[str, Any], old: dict[str, Any]) -> None:
        """What a replace or patch of the object (not its status) gets."""
        if is_crds(res):
            validate(obj, old)
            _keep_status(res, obj, old)
            _generation(obj, old)
            obj["status"] = crd_status(obj, obj.get("status"))
        elif res.crd:
            _keep_status(res, obj, old)
            _generation(obj, old)
        else:
            ctl.admit_update(res.plural, obj, old)

    def deleting(self, res: Resource, name: str) -> None:
        """Before a CRD is deleted: delete every object of its resource (the versions
        share them), finalizers or not."""
        if not is_crds(res):
            return
        with self.store.lock:
            done: set[str] = set()
            for r in self.catalog.custom.get(name, []):
                if r.plural in done:
                    continue
                done.add(r.plural)
                for o in self.store.list(r, None)[0]:
                    self.store.delete(r, o["metadata"].get("namespace", ""), o["metadata"]["name"], force=True)
