"""HTTPS server of the lab Kubernetes API stand-in (stdlib http.server + ssl).

It serves discovery, CRUD with label/field selectors, merge / strategic-merge / JSON
patch, the status, eviction and log subresources, watch (``watch.py``), Table output and
the resources CustomResourceDefinitions define (``crds.py``): enough of the real API for
the official Python client, ``kubectl`` and the ``kubeadm`` stand-in. Pods that name a
command are run on their node over SSH by the stand-in kubelet (``kubelet.py``).
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from . import controllers as ctl
from . import openapi
from .config import Paths, ensure_token, kubeconfig_doc
from .crds import Crds
from .kubelet import Kubelet
from .patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from .pki import ensure_pki
from .podlogs import pod_log
from .resources import RESOURCES, Resource, find
from .selectors import SelectorError, labels_match, parse_field_selector, parse_label_selector
from .store import ApiStatus, Store, now_rfc3339
from .tables import to_table
from .watch import Stream, WatchHub

log = logging.getLogger("lab.kubeapi")

K8S_VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.4-bringup-lab", "gitCommit": "lab",
               "gitTreeState": "clean", "buildDate": "2025-04-22T00:00:00Z", "goVersion": "go1.23.8",
               "compiler": "gc", "platform": "linux/amd64"}

# bringup-system: the lab cluster is one where deploy/rbac.yaml was applied (bringup's own
# namespace: its ServiceAccount and the readiness gate's smoke pods)
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "bringup-system")


class KubeApi:
    """The API's state and request logic, independent of HTTP plumbing."""

    def __init__(self, home: Path, host: str, port: int, persist: bool = True,
                 endpoints: dict[str, tuple[str, int]] | None = None) -> None:
        self.paths = Paths(home)
        self.pki = ensure_pki(self.paths.kube, [host])
        self.admin_token = ensure_token(self.paths.token)
        self.host, self.port = host, port
        self.store = Store(self.paths.state if persist else None)
        self.store.hooks.append(self._on_write)
        self.crds = Crds(self.store)  # the CRDs of the snapshot are served again
        self.watch = WatchHub(self.store)
        self.kubelet = Kubelet(self.store, home, endpoints)
        self._bootstrap()

    @property
    def server_url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def _bootstrap(self) -> None:
        ns_res = find("", "v1", "namespaces")
        for ns in DEFAULT_NAMESPACES:
            if self.store.find(ns_res, "", ns) is None:
                self.store.create(ns_res, "", {"metadata": {"name": ns}, "status": {"phase": "Active"}})
        ca_pem = self.pki.ca_cert.read_bytes()
        # cluster-info is what kubeadm discovery reads: the API endpoint and CA, no user
        # JSON is valid YAML, and it lets the stdlib-only kubeadm stand-in read it
        info = json.dumps(kubeconfig_doc(self.server_url, ca_pem, None), indent=2)
        cm = self.store.find(ctl.CONFIGMAPS, "kube-public", "cluster-info")
        if cm is None:
            self.store.create(ctl.CONFIGMAPS, "kube-public",
                              {"metadata": {"name": "cluster-info"}, "data": {"kubeconfig": info}})
        elif (cm.get("data") or {}).get("kubeconfig") != info:
            cm.setdefault("data", {})["kubeconfig"] = info
            self.store.replace(ctl.CONFIGMAPS, "kube-public", "cluster-info", cm, check_rv=False)
        ctl.sign_cluster_info(self.store)
        self.paths.kubeconfig.write_text(yaml.safe_dump(kubeconfig_doc(self.server_url, ca_pem,
                                                                       self.admin_token), sort_keys=False))
        self.paths.kubeconfig.chmod(0o600)

    def _on_write(self, res: Resource, old: dict | None, new: dict | None) -> None:
        obj = new or old or {}
        if res.plural == "secrets" and obj.get("type") == ctl.BOOTSTRAP_TYPE:
            ctl.sign_cluster_info(self.store)

    # --- request handling -------------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        url = urlsplit(raw_path)
        path = url.path.rstrip("/") or "/"
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        user = ctl.authenticate(self.store, self.admin_token, headers.get("authorization"))
        if path in ("/healthz", "/readyz", "/livez"):
            return 200, "ok"
        if path == "/version":
            return 200, K8S_VERSION
        if user is ctl.ANONYMOUS and path != "/api/v1/namespaces/kube-public/configmaps/cluster-info":
            raise ApiStatus(401, "Unauthorized")
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                         "serverAddress": f"{self.host}:{self.port}"}]}
        if path == "/apis":
            return 200, self.crds.catalog.api_group_list()
        if path == "/openapi/v3" or path.startswith("/openapi/v3/"):
            doc = openapi.lookup(path, self.crds.catalog.resources())
            if doc is None:
                raise ApiStatus(404, "the server could not find the requested resource")
            return 200, doc
        if path.startswith("/openapi/"):
            raise ApiStatus(404, "the lab API stand-in does not publish OpenAPI documents")
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 2:
            if len(parts) == 2:
                if (doc := self.crds.catalog.api_group(parts[1])) is None:
                    raise ApiStatus(404, f"the server could not find the requested resource ({path})")
                return 200, doc
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiStatus(404, "the server could not find the requested resource")
        if not rest:
            doc = self.crds.catalog.resource_list(group, version)
            if doc is None:
                raise ApiStatus(404, "the server could not find the requested resource")
            return 200, doc
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        res = self.crds.catalog.find(group, version, rest[0])
        if res is None or (namespace and not res.namespaced) or len(rest) > 3:
            raise ApiStatus(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in res.subresources:
            raise ApiStatus(404, "the server could not find the requested resource")
        return self._resource(method, res, namespace, name, sub, q, headers, body, user)

    def _read_body(self, headers: dict[str, str], body: bytes) -> Any:
        ctype = headers.get("content-type", "application/json").split(";")[0].strip()
        if "protobuf" in ctype or "cbor" in ctype:  # the stand-in speaks JSON and YAML only: say so
            raise ApiStatus(415, f"the body of the request was in an unknown format - accepted media types "
                                 f"include: application/json, application/yaml (got {ctype!r})")
        try:
            if ctype in ("application/yaml", "application/apply-patch+yaml"):
                return yaml.safe_load(body.decode())
            return json.loads(body.decode() or "null")
        except (ValueError, yaml.YAMLError) as exc:
            raise ApiStatus(400, f"the request body is not valid: {exc}") from None

    def _verb(self, method: str, name: str, q: dict[str, str]) -> str:
        if method == "GET":
            if q.get("watch") in ("true", "1"):
                return "watch"
            return "get" if name else "list"
        return {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}.get(method, method.lower())

    def _resource(self, method: str, res: Resource, namespace: str, name: str, sub: str, q: dict[str, str],
                  headers: dict[str, str], body: bytes, user: ctl.User) -> tuple[int, Any]:
        verb = self._verb(method, name, q)
        ctl.authorize(user, "create" if sub == "eviction" else verb, res.plural, namespace, name)
        store = self.store
        if sub == "log":
            if method != "GET":
                raise ApiStatus(405, "logs can only be read")
            return 200, pod_log(store, self.kubelet, namespace, name, q)
        if (res.namespaced and namespace and verb in ("create", "update", "patch")
                and store.find(ctl.NAMESPACES, "", namespace) is None):
            raise ApiStatus(404, f'namespaces "{namespace}" not found',
                                details={"name": namespace, "kind": "namespaces"})
        table = "as=Table" in headers.get("accept", "")
        if verb in ("list", "watch"):
            try:
                reqs = parse_label_selector(q.get("labelSelector", ""))
                fsel = parse_field_selector(q.get("fieldSelector", ""), set(res.fields))
            except SelectorError as exc:
                raise ApiStatus(400, str(exc)) from None

            def pred(o: dict[str, Any]) -> bool:
                return labels_match(reqs, o["metadata"].get("labels")) and fsel(o)
            if verb == "watch":
                return 200, self._watch(res, namespace, name, pred, q, table)
            items, rv = store.list(res, namespace or None, pred)
            items = [self._decorate(res, o) for o in items]
            if table:
                return 200, to_table(res, items, rv)
            return 200, {"kind": f"{res.kind}List", "apiVersion": res.api_version,
                         "metadata": {"resourceVersion": rv}, "items": items}
        if verb == "get":
            if res.plural == "configmaps" and (namespace, name) == ("kube-public", "cluster-info"):
                ctl.sign_cluster_info(store)  # the signer drops tokens that expired since the last write
            obj = self._decorate(res, store.get(res, namespace, name))
            return 200, (to_table(res, [obj], obj["metadata"]["resourceVersion"]) if table else obj)
        if sub == "eviction":
            if method != "POST":
                raise ApiStatus(405, "evictions can only be created")
            return 201, ctl.evict(store, namespace, name)
        if verb == "create":
            obj = self._read_body(headers, body)
            if not isinstance(obj, dict) or obj.get("kind") not in (None, res.kind):
                raise ApiStatus(400, f"the body of the request is not a {res.kind}")
            body_ns = (obj.get("metadata") or {}).get("namespace")
            if res.namespaced and body_ns and body_ns != namespace:
                raise ApiStatus(400, "the namespace of the provided object does not match the namespace "
                                     "sent on the request")
            self._admit(res, obj)
            if q.get("dryRun") == "All":
                return 201, obj
            return 201, self._decorate(res, store.create(res, namespace, obj))
        if verb == "update":
            obj = self._read_body(headers, body)
            if not isinstance(obj, dict):
                raise ApiStatus(400, f"the body of the request is not a {res.kind}")
            with store.lock:
                if sub == "status":  # the status subresource changes status only
                    cur = store.get(res, namespace, name)
                    cur["status"] = obj.get("status") or {}
                    cur["metadata"]["resourceVersion"] = (obj.get("metadata") or {}).get(
                        "resourceVersion") or cur["metadata"]["resourceVersion"]
                    obj = cur
                else:
                    self.crds.admit_update(res, obj, store.get(res, namespace, name))
                return 200, self._decorate(res, store.replace(res, namespace, name, obj))
        if verb == "patch":
            patch = self._read_body(headers, body)
            ctype = headers.get("content-type", "").split(";")[0].strip()
            with store.lock:
                cur = store.get(res, namespace, name)
                try:
                    if ctype == "application/json-patch+json":
                        new = json_patch(cur, patch)
                    elif ctype == "application/merge-patch+json":
                        new = merge_patch(cur, patch)
                    elif ctype == "application/strategic-merge-patch+json" and not res.crd:  # not for CRs
                        new = strategic_merge_patch(cur, patch)
                    else:
                        raise ApiStatus(415, f"the body of the request was in an unknown format - accepted "
                                             f"media types include: application/json-patch+json, "
                                             f"application/merge-patch+json, "
                                             f"application/strategic-merge-patch+json (got {ctype!r})")
                except PatchError as exc:
                    raise ApiStatus(422, str(exc)) from None
                if not isinstance(new, dict):
                    raise ApiStatus(422, "the patch did not produce an object")
                if sub == "status":
                    cur["status"] = new.get("status") or {}
                    new = cur
                else:
                    self.crds.admit_update(res, new, cur)
                # a resourceVersion in the patch is a precondition; none means "latest"
                new.setdefault("metadata", {})
                if not new["metadata"].get("resourceVersion"):
                    new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
                if q.get("dryRun") == "All":
                    return 200, new
                return 200, self._decorate(res, store.replace(res, namespace, name, new))
        if verb == "delete":
            if res.plural == "namespaces":
                if name in ("default", "kube-system", "kube-public"):
                    raise ApiStatus(403, f'namespaces "{name}" is forbidden: this namespace may not be deleted')
                with store.lock:  # the namespace controller removes what the namespace held
                    for r in self.crds.catalog.resources():
                        if r.namespaced:
                            for o in store.list(r, name)[0]:
                                store.delete(r, name, o["metadata"]["name"])
            self.crds.deleting(res, name)  # a CRD's objects go with it
            obj = store.delete(res, namespace, name)  # one with finalizers is only marked
            obj["metadata"].setdefault("deletionTimestamp", now_rfc3339())
            return 200, self._decorate(res, obj)
        raise ApiStatus(405, f"{method} is not supported on {res.plural}")

    def _watch(self, res: Resource, namespace: str, name: str, pred: Any, q: dict[str, str],
               table: bool) -> Stream:
        if name:  # GET .../pods/NAME?watch=true is a watch with metadata.name=NAME
            outer = pred

            def pred(o: dict[str, Any]) -> bool:
                return o["metadata"]["name"] == name and outer(o)
        timeout = float(q.get("timeoutSeconds") or 1800)
        events = self.watch.events(res, namespace or None, pred, q.get("resourceVersion", ""), timeout)

        def lines() -> Any:
            first = True
            for ev in events:
                obj = ev["object"]
                if obj.get("kind") != "Status":
                    obj = self._decorate(res, obj)
                    if table:  # kubectl get -w: a one-row Table per event, headers only at first
                        obj = to_table(res, [obj], obj["metadata"]["resourceVersion"])
                        if not first:
                            obj["columnDefinitions"] = []
                        first = False
                yield (json.dumps({"type": ev["type"], "object": obj}) + "\n").encode()
        return Stream(lines(), "application/json")

    def _admit(self, res: Resource, obj: dict[str, Any]) -> None:
        self.crds.admit(res, obj)

    def _decorate(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        obj = {**obj, "apiVersion": res.api_version}  # one object, answered in the version asked
        if res.plural == "poddisruptionbudgets":
            return ctl.with_pdb_status(self.store, obj)
        return obj


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            code, payload = self.server.api.handle(self.command, self.path, headers, body)
        except ApiStatus as exc:
            code, payload = exc.code, exc.body()
        except Exception as exc:  # report, never kill the server thread silently
            log.exception("internal error on %s %s", self.command, self.path.split("?")[0])
            code, payload = 500, ApiStatus(500, f"internal error: {exc}").body()
        if isinstance(payload, Stream):
            self._stream(code, payload)
            return
        if isinstance(payload, str):
            data, ctype = payload.encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload).encode(), "application/json"
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, code: int, stream: Stream) -> None:
        """A chunked body, one chunk per item, flushed at once (watch, ``logs -f``)."""
        self.send_response(code)
        self.send_header("Content-Type", stream.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        try:
            for chunk in stream.chunks:
                if chunk:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True  # the client went away: stop following

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        # the request line never holds a credential (tokens travel in headers)
        log.info("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    api: KubeApi


def make_server(home: Path, host: str = "127.0.0.1", port: int = 26443, persist: bool = True,
                endpoints: dict[str, tuple[str, int]] | None = None) -> _Server:
    api = KubeApi(home, host, port, persist=persist, endpoints=endpoints)
    httpd = _Server((host, port), _Handler)
    if port == 0:  # an ephemeral port: rewrite the addresses that name it
        api.port = httpd.server_address[1]
        api._bootstrap()
    httpd.api = api
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(api.pki.server_cert, api.pki.server_key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    api.kubelet.start()
    return httpd


def serve_in_thread(home: Path, host: str = "127.0.0.1", port: int = 0, persist: bool = False,
                    endpoints: dict[str, tuple[str, int]] | None = None) -> tuple[_Server, threading.Thread]:
    """Start a server on a background thread (tests); stop with ``httpd.shutdown()``."""
    httpd = make_server(home, host, port, persist=persist, endpoints=endpoints)
    t = threading.Thread(target=httpd.serve_forever, name="kubeapi", daemon=True)
    t.start()
    return httpd, t


__all__ = ["RESOURCES", "KubeApi", "make_server", "serve_in_thread"]
