"""The service root and the SessionService: HTTP to one BMC, TLS, retries, login, ``$expand``.

Built on DMTF's python-redfish-library (``redfish.redfish_client``), which does the HTTP
and holds the session token. On top of it:

- TLS verification on by default. The library verifies only when given a ``cafile``
  (``verify=False`` otherwise), so it always gets one: the operator's CA bundle, or
  certifi's store; ``insecure=True`` is the only way to turn verification off.
- Our own retries (:func:`bringup.retry.retry`), on connection errors and transient
  statuses only (the library's ``max_retry`` retries everything after a fixed 1 s, so it is 0).
- Every status, the login's included, goes through
  :func:`bringup.redfish.responses.raise_for_response`. The library's ``login()`` reports a
  refused session only as an exception whose *text* holds the status
  (``InvalidCredentialsError``, ``SessionCreationError("HTTP 403: ...")``), so the session
  POST is sent here, its reply judged by the map like any other, and the token handed to
  the library (``set_session_key``); without a usable SessionService (405, 404, 400) every
  request carries Basic authentication instead (``set_authorization_key``).
- ``request_count``: HTTP requests actually sent (retries included), for the benchmark.
"""

from __future__ import annotations

import base64
import logging
import os
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Self

import certifi
import requests
from redfish import redfish_client
from redfish.rest.v1 import RetriesExhaustedError
from requests.adapters import HTTPAdapter
from urllib3.util.ssl_ import create_urllib3_context

from bringup.errors import (
    ParseError,
    RedfishAuthError,
    RedfishError,
    RedfishNotFoundError,
    RedfishRequestError,
    RedfishTimeoutError,
    RedfishTLSError,
    TransientError,
)
from bringup.redfish.address import base_url
from bringup.redfish.models import ServiceRootDoc, parse
from bringup.redfish.responses import TRANSIENT, decode_json, extended_info, message_id, raise_for_response
from bringup.retry import Backoff, retry

log = logging.getLogger(__name__)

ROOT = "/redfish/v1/"
#: where sessions are created when the service root does not say (DSP0266)
SESSIONS = "/redfish/v1/SessionService/Sessions"
#: pauses between tries of one request or of the login: 0.25 s doubling to 4 s, jittered
BACKOFF = Backoff(first=0.25, factor=2.0, cap=4.0, jitter=0.5)


def now() -> float:
    """The adapter's clock, looked up at each call (tests move ``time.monotonic``)."""
    return time.monotonic()


def pause(seconds: float) -> None:
    """The adapter's sleep, looked up at each call (tests replace ``time.sleep``)."""
    time.sleep(seconds)


@dataclass(frozen=True)
class Credentials:
    """BMC user name and password; the password never appears in repr or logs."""

    username: str
    password: str = field(repr=False)


_contexts: dict[tuple[str, float], ssl.SSLContext] = {}
_contexts_lock = threading.Lock()


def _verifying_context(cafile: str) -> ssl.SSLContext:
    """One verifying TLS context per CA bundle (and its mtime), shared by every BMC session.

    requests would otherwise build a context and parse the bundle again for each BMC's
    connection pool: about half a millisecond of CPU per BMC, most of what a discovery of
    a large fleet spends outside the HTTP exchanges themselves.
    """
    key = (cafile, os.stat(cafile).st_mtime)
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
            ctx.load_verify_locations(cafile=cafile)
            _contexts[key] = ctx
        return ctx


class _CountingAdapter(HTTPAdapter):
    """Counts every HTTP request the session sends (the library's and ours); with
    ``ssl_context`` the pools use that already loaded context instead of a CA path."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl_context = ssl_context
        super().__init__(pool_connections=1, pool_maxsize=2, max_retries=0)
        self.count = 0

    def build_connection_pool_key_attributes(self, request, verify, cert=None):  # type: ignore[override]
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        if self._ssl_context is not None and verify:
            pool_kwargs.pop("ca_certs", None)
            pool_kwargs.pop("ca_cert_dir", None)
            pool_kwargs["ssl_context"] = self._ssl_context
        return host_params, pool_kwargs

    def cert_verify(self, conn, url, verify, cert):  # type: ignore[override]
        if self._ssl_context is not None and verify:
            conn.cert_reqs = "CERT_REQUIRED"   # the context holds the CAs: nothing to load per pool
            return
        super().cert_verify(conn, url, verify, cert)

    def send(self, request, **kwargs):  # type: ignore[override]
        self.count += 1
        return super().send(request, **kwargs)


@dataclass
class Reply:
    status: int
    doc: Any
    headers: dict[str, str]


class _Busy(Exception):
    """A transient status, carried out of one try so :func:`retry` tries again."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(f"HTTP {reply.status}")
        self.reply = reply


class Session:
    """Logged-in HTTP access to one BMC's Redfish service."""

    def __init__(self, address: str, creds: Credentials, *, port: int = 443, ca_bundle: str | None = None,
                 insecure: bool = False, timeout: float = 10.0, retries: int = 3) -> None:
        self.address = address
        self.base_url = base_url(address, port)   # junk is a ConfigError here, not an unreachable BMC
        self.timeout = timeout
        self.retries = max(0, retries)
        self._creds = creds
        cafile = None if insecure else (str(ca_bundle) if ca_bundle else certifi.where())
        self._adapter = _CountingAdapter(_verifying_context(cafile) if cafile else None)
        self._client = redfish_client(base_url=self.base_url, username=creds.username, password=creds.password,
                                      cafile=cafile, timeout=timeout, max_retry=0, check_connectivity=False,
                                      https_adapter=self._adapter)
        if self.base_url.startswith("http://"):
            self._client._session.mount("http://", self._adapter)
        # BMC traffic never goes through proxies or .netrc from the environment (and skipping
        # that lookup per request is measurably cheaper across a fleet)
        self._client._session.trust_env = False
        self._logged_in = False
        self._session_auth = False   # True once logged in with a SessionService session
        self._sessions_uri = SESSIONS
        self.root: ServiceRootDoc | None = None
        #: False turns $expand off (the ``expand`` quirk, or a caller's override)
        self.expand = True

    @property
    def request_count(self) -> int:
        return self._adapter.count

    @property
    def name(self) -> str:
        return f"BMC {self.address}"

    def _transport_error(self, exc: BaseException, method: str, path: str) -> RedfishError:
        cause = exc.__cause__ or exc
        if isinstance(cause, requests.exceptions.SSLError) and "WRONG_VERSION_NUMBER" in str(cause):
            # OpenSSL's word for a server that answered our TLS hello in plain text (HTTP)
            return RedfishTLSError(f"{self.name}: {self.base_url} does not speak TLS (it answered in plain text)",
                                   hint="give the BMC's HTTPS port, or http://host:port where the service is "
                                        "plain HTTP")
        if isinstance(cause, requests.exceptions.SSLError):
            return RedfishTLSError(f"{self.name}: TLS verification failed for {self.base_url}: {cause}",
                                   hint="set bmc_ca_bundle in the controller's settings to the CA that signed "
                                        "this BMC's certificate (ca_bundle= when calling connect); "
                                        "bmc_insecure: true turns verification off, for a lab only")
        if isinstance(cause, requests.exceptions.Timeout):
            return RedfishTimeoutError(f"{self.name}: no answer to {method} {path} within {self.timeout:g}s",
                                       hint="check the BMC is up and not overloaded; retry later")
        return RedfishTimeoutError(f"{self.name}: cannot reach {self.base_url} ({type(cause).__name__})",
                                   hint="check the address, port and the BMC network")

    # --- requests -----------------------------------------------------------------------
    def _exchange(self, method: str, path: str, *, body: Any = None, args: dict[str, Any] | None = None,
                  headers: dict[str, str] | None = None) -> Reply:
        """One HTTP exchange, never retried; a transport failure is raised as our error (its
        ``__cause__`` the requests exception), the status is not judged."""
        kwargs: dict[str, Any] = {"timeout": self.timeout}
        if args:
            kwargs["args"] = args
        if body is not None:
            kwargs["body"] = body
        if headers:
            kwargs["headers"] = dict(headers)   # the library adds its own to this dict
        try:
            resp = getattr(self._client, method.lower())(path, **kwargs)
        except RetriesExhaustedError as exc:
            raise self._transport_error(exc, method, path) from exc.__cause__
        got = {k.lower(): v for k, v in resp.getheaders()}
        # decoded here, not by the library's ``dict``: that logs the whole body of a non-JSON
        # answer (a web UI's login page) to stderr before raising
        return Reply(resp.status, decode_json(resp.read, got.get("content-type", ""), method, path, self.name,
                                              lenient=resp.status >= 400), got)

    def call(self, method: str, path: str, *, body: Any = None, args: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None) -> Reply:
        """One request with our retry policy; the status is *not* judged here (see :meth:`request`).
        ``headers``: extra request headers (``Content-Type: multipart/form-data`` makes the
        library encode ``body``'s parts as a multipart form, for a firmware push)."""
        relogged = False

        def once() -> Reply:
            nonlocal relogged
            reply = self._exchange(method, path, body=body, args=args, headers=headers)
            if reply.status == 401 and self._session_auth and not relogged:
                # the session timed out (BMCs drop idle ones after their SessionTimeout,
                # e.g. while an OS installs) or was deleted: log in again, once
                relogged = True
                log.info("%s: session no longer valid; logging in again", self.name)
                self._open_session()
                reply = self._exchange(method, path, body=body, args=args, headers=headers)
            if reply.status in TRANSIENT:
                raise _Busy(reply)
            return reply

        def acted_on(exc: BaseException) -> bool:
            # a read timeout on a non-idempotent request may have been acted on: no retry
            return method != "GET" and isinstance(exc.__cause__, requests.exceptions.ReadTimeout)

        try:
            return retry(once, attempts=self.retries + 1, retry_on=(RedfishTimeoutError, _Busy),
                         give_up=acted_on, backoff=BACKOFF, sleep=pause, clock=now)
        except _Busy as busy:
            return busy.reply   # still busy after the retries: the status map says what it means

    def request(self, method: str, path: str, *, body: Any = None, args: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None) -> Reply:
        """:meth:`call`, then the status map: a reply below 400 or an exception."""
        reply = self.call(method, path, body=body, args=args, **({"headers": headers} if headers else {}))
        raise_for_response(reply.status, reply.doc, method, path, self.name)
        return reply

    def get(self, path: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """GET a resource and return its decoded JSON object."""
        doc = self.request("GET", path, args=args).doc
        if not isinstance(doc, dict):
            raise ParseError("expected a JSON object", path="$", source=f"{self.name} {path}")
        return doc

    # --- $expand ------------------------------------------------------------------------
    def _expand_features(self) -> dict[str, Any]:
        if not self.expand or self.root is None:
            return {}
        return (self.root.ProtocolFeaturesSupported or {}).get("ExpandQuery") or {}

    def max_expand_levels(self) -> int:
        """The deepest ``$expand`` the service serves: 0 without expand, 1 without ``$levels``."""
        feats = self._expand_features()
        if not (feats.get("NoLinks") or feats.get("ExpandAll")):
            return 0
        return max(1, int(feats.get("MaxLevels") or 1)) if feats.get("Levels") else 1

    def expand_args(self, levels: int = 1) -> dict[str, Any] | None:
        """``$expand`` query for ``levels`` of subordinate resources (capped), if served."""
        cap = self.max_expand_levels()
        if not cap or levels < 1:
            return None
        feats = self._expand_features()
        # "." leaves Links alone (smaller answers); "*" is the fallback where "." is not served
        op = "." if feats.get("NoLinks") else "*"
        return {"$expand": op + (f"($levels={min(levels, cap)})" if feats.get("Levels") else "")}

    # --- login --------------------------------------------------------------------------
    def login(self) -> ServiceRootDoc:
        """Read the service root and open a session (Basic auth where the service has none);
        transient failures are tried again, the rest raised as the status map says."""
        self.root = retry(self._login_once, attempts=self.retries + 1, retry_on=(TransientError,),
                          backoff=BACKOFF, sleep=pause, clock=now)
        return self.root

    def _login_once(self) -> ServiceRootDoc:
        reply = self._exchange("GET", ROOT)
        root: ServiceRootDoc | None = None
        # some BMCs answer 401 on the service root until logged in: read it again afterwards
        if reply.status == 404:   # every Redfish service has a root: this is another web server
            raise RedfishNotFoundError(f"{self.name}: {self.base_url} has no Redfish service root (GET {ROOT} "
                                       "answered HTTP 404)", hint="check the address and port point at the BMC's "
                                                                  "Redfish service, not another web server")
        if reply.status != 401:
            raise_for_response(reply.status, reply.doc, "GET", ROOT, self.name)
            root = parse(ServiceRootDoc, reply.doc, ROOT)
            sessions = root.Links.Sessions if root.Links else None
            self._sessions_uri = sessions.odata_id if sessions else SESSIONS
        self._open_session()
        self._logged_in = True
        return root or parse(ServiceRootDoc, self.get(ROOT), ROOT)

    def _open_session(self) -> None:
        """POST a new session; its reply goes through the status map. A refusal (401, 403) or
        a busy service raises; a service without sessions (400, 404, 405) gets Basic auth."""
        self._session_auth = False
        self._client.set_session_key(None)       # a dead session's token must not ride along
        self._client.set_authorization_key(None)
        uri = self._sessions_uri
        reply = self._exchange("POST", uri, body={"UserName": self._creds.username,
                                                  "Password": self._creds.password})
        token = reply.headers.get("x-auth-token")
        if reply.status < 300 and token:
            self._client.set_session_key(token)
            doc = reply.doc if isinstance(reply.doc, dict) else {}
            self._client.set_session_location(reply.headers.get("location") or doc.get("@odata.id"))
            self._session_auth = True
            if any(message_id(m).endswith("PasswordChangeRequired") for m in extended_info(reply.doc)):
                self._logged_in = True   # so that close() deletes the session
                raise RedfishAuthError(f"{self.name}: the account {self._creds.username!r} must change its "
                                       "password before it may be used",
                                       hint="set a new password on the BMC and in the credentials file")
            return
        try:
            raise_for_response(reply.status, reply.doc, "POST", uri, self.name)
        except (RedfishRequestError, RedfishNotFoundError) as exc:
            log.info("%s: no session (%s); using Basic authentication", self.name, exc)
        # no usable SessionService: Basic authentication on every request; a wrong password
        # is then the first request's 401, through the same status map
        basic = base64.b64encode(f"{self._creds.username}:{self._creds.password}".encode()).decode()
        self._client.set_authorization_key(f"Basic {basic}")

    def close(self) -> None:
        if self._logged_in:
            self._logged_in = False
            try:
                self._client.logout()
            except Exception as exc:  # noqa: BLE001 - a failed logout only leaks a session that times out
                log.info("%s: logout failed: %s", self.name, exc)
        else:
            self._client._session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
