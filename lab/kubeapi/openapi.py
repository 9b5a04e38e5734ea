"""Just enough OpenAPI v3 for ``kubectl create/apply`` validation.

kubectl (>=1.27) asks ``/openapi/v3`` whether the server supports server-side field
validation: it looks for a PATCH operation tagged with the object's
``x-kubernetes-group-version-kind`` that takes a ``fieldValidation`` query parameter.
When found, kubectl leaves validation to the server instead of downloading schemas.
The documents below describe those operations and nothing else, for the resources the
server serves (its custom resources included: ``kubectl apply`` of a custom object asks too).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .resources import RESOURCES, Resource


def _prefix(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def group_version_doc(group: str, version: str, resources: list[Resource] = RESOURCES) -> dict[str, Any] | None:
    paths: dict[str, Any] = {}
    for r in resources:
        if (r.group, r.version) != (group, version):
            continue
        base = "/" + _prefix(group, version) + ("/namespaces/{namespace}" if r.namespaced else "")
        params = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                  {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}}]
        gvk = {"group": group, "version": version, "kind": r.kind}
        op = {"operationId": f"patch{r.kind}", "parameters": params, "x-kubernetes-action": "patch",
              "x-kubernetes-group-version-kind": gvk, "responses": {"200": {"description": "OK"}}}
        paths[f"{base}/{r.plural}/{{name}}"] = {"patch": op}
    if not paths:
        return None
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.4"}, "paths": paths}


def root_doc(resources: list[Resource] = RESOURCES) -> dict[str, Any]:
    out = {}
    for gv in sorted({(r.group, r.version) for r in resources}):
        doc = group_version_doc(*gv, resources)
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
        out[_prefix(*gv)] = {"serverRelativeURL": f"/openapi/v3/{_prefix(*gv)}?hash={digest}"}
    return {"paths": out}


def lookup(path: str, resources: list[Resource] = RESOURCES) -> dict[str, Any] | None:
    """The document for ``/openapi/v3[/...]``, or None."""
    rest = path[len("/openapi/v3"):].strip("/")
    if not rest:
        return root_doc(resources)
    parts = rest.split("/")
    if parts[0] == "api" and len(parts) == 2:
        return group_version_doc("", parts[1], resources)
    if parts[0] == "apis" and len(parts) == 3:
        return group_version_doc(parts[1], parts[2], resources)
    return None
