"""HTTP to one BMC: TLS, sessions, retries, login and relogin, ``$expand`` negotiation.

Built on DMTF's python-redfish-library (``redfish.redfish_client``), which does the HTTP,
sessions and Basic auth. On top of it:

- TLS verification on by default. The library verifies only when given a ``cafile``
  (``verify=False`` otherwise), so it always gets one: the operator's CA bundle, or
  certifi's store; ``insecure=True`` is the only way to turn verification off.
- Our own retries with exponential backoff, on connection errors and transient statuses
  only (the library's ``max_retry`` retries everything after a fixed 1 s, so it is 0).
- Every status goes through :func:`bringup.redfish.responses.raise_for_response`.
- ``request_count``: HTTP requests actually sent (retries included), for the benchmark.
"""

from __future__ import annotations

import logging
import os
import random
import re
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Self

import certifi
import requests
from redfish import redfish_client
from redfish.rest.v1 import (
    InvalidCredentialsError,
    JsonDecodingError,
    RetriesExhaustedError,
    ServerDownOrUnreachableError,
    SessionCreationError,
)
from requests.adapters import HTTPAdapter
from urllib3.util.ssl_ import create_urllib3_context

from bringup.errors import (
    ParseError,
    RedfishAuthError,
    RedfishError,
    RedfishRequestError,
    RedfishServerError,
    RedfishTimeoutError,
    RedfishTLSError,
)

from bringup.redfish.models import ServiceRootDoc, parse
from bringup.redfish.responses import TRANSIENT, raise_for_response

log = logging.getLogger(__name__)

ROOT = "/redfish/v1/"
BACKOFF_BASE = 0.25
BACKOFF_MAX = 4.0


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


class Session:
    """Logged-in HTTP access to one BMC's Redfish service."""

    def __init__(self, address: str, creds: Credentials, *, port: int = 443, ca_bundle: str | None = None,
                 insecure: bool = False, timeout: float = 10.0, retries: int = 3) -> None:
        self.address = address
        self.base_url = address.rstrip("/") if "://" in address else f"https://{address}:{port}"
        self.timeout = timeout
        self.retries = max(0, retries)
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
        self.root: ServiceRootDoc | None = None
        #: False turns $expand off (the ``expand`` quirk, or a caller's override)
        self.expand = True

    @property
    def request_count(self) -> int:
        return self._adapter.count

    @property
    def name(self) -> str:
        return f"BMC {self.address}"

    def _sleep_backoff(self, attempt: int) -> None:
        delay = min(BACKOFF_MAX, BACKOFF_BASE * (2 ** attempt))
        time.sleep(delay * (0.5 + random.random() / 2))

    def _transport_error(self, exc: BaseException, method: str, path: str) -> RedfishError:
        cause = exc.__cause__ or exc
        if isinstance(cause, requests.exceptions.SSLError):
            return RedfishTLSError(f"{self.name}: TLS verification failed for {self.base_url}: {cause}",
                                   hint="pass the BMC CA with ca_bundle=, or insecure=True for a lab")
        if isinstance(cause, requests.exceptions.Timeout):
            return RedfishTimeoutError(f"{self.name}: no answer to {method} {path} within {self.timeout:g}s",
                                       hint="check the BMC is up and not overloaded; retry later")
        return RedfishTimeoutError(f"{self.name}: cannot reach {self.base_url} ({type(cause).__name__})",
                                   hint="check the address, port and the BMC network")

    # --- requests -----------------------------------------------------------------------
    def call(self, method: str, path: str, *, body: Any = None, args: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None) -> Reply:
        """One request with our retry policy; the status is *not* judged here (see :meth:`request`).
        ``headers``: extra request headers (``Content-Type: multipart/form-data`` makes the
        library encode ``body``'s parts as a multipart form, for a firmware push)."""
        reply: Reply | None = None
        relogged = False
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep_backoff(attempt - 1)
            fn = getattr(self._client, method.lower())
            kwargs: dict[str, Any] = {"timeout": self.timeout}
            if args:
                kwargs["args"] = args
            if body is not None:
                kwargs["body"] = body
            if headers:
                kwargs["headers"] = dict(headers)   # the library adds its own to this dict
            try:
                resp = fn(path, **kwargs)
                if resp.status == 401 and self._session_auth and not relogged:
                    # the session timed out (BMCs drop idle ones after their SessionTimeout,
                    # e.g. while an OS installs) or was deleted: log in again, once
                    relogged = True
                    log.info("%s: session no longer valid; logging in again", self.name)
                    self._relogin()
                    resp = fn(path, **kwargs)
            except RetriesExhaustedError as exc:
                err = self._transport_error(exc, method, path)
                cause = exc.__cause__
                # a read timeout on a non-idempotent request may have been acted on: no retry
                if isinstance(cause, requests.exceptions.SSLError) or (
                        isinstance(cause, requests.exceptions.ReadTimeout) and method != "GET"):
                    raise err from None
                if attempt == self.retries:
                    raise err from None
                continue
            headers = {k.lower(): v for k, v in resp.getheaders()}
            reply = Reply(resp.status, self._decode(resp, path, lenient=resp.status >= 400), headers)
            if resp.status not in TRANSIENT:
                return reply
        assert reply is not None
        return reply

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

    def _decode(self, resp: Any, path: str, *, lenient: bool = False) -> Any:
        if not (resp.read or b"").strip():
            return None
        try:
            return resp.dict
        except JsonDecodingError:
            if lenient:
                return None
            size = len(resp.read or b"")
            raise ParseError(f"the body ({size} bytes) is not valid JSON; it may be truncated", path="$",
                             source=f"{self.name} {path}",
                             hint="retry; if it persists the BMC firmware is faulty") from None

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
        """Open a session (Basic auth where the service has none) and read the service root."""
        last: RedfishError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep_backoff(attempt - 1)
            try:
                self._login_once()
                break
            except RetriesExhaustedError as exc:
                last = self._transport_error(exc, "GET", ROOT)
                if isinstance(exc.__cause__, requests.exceptions.SSLError):
                    raise last from None
            except ServerDownOrUnreachableError as exc:
                status = getattr(getattr(exc, "response", None), "status", None)
                if status is not None and status < 500 and status != 503:
                    raise RedfishRequestError(f"{self.name}: the service root answered HTTP {status}",
                                              hint="check the BMC address and that Redfish is enabled") from None
                last = RedfishServerError(f"{self.name}: the service root answered HTTP {status}",
                                          hint="the BMC's Redfish service is failing; retry later or reset the BMC")
            except JsonDecodingError:
                raise ParseError("the service root is not valid JSON; it may be truncated", path="$",
                                 source=f"{self.name} {ROOT}", hint="check the BMC firmware") from None
        else:
            assert last is not None
            raise last
        if self._client.root_resp.status != 200:
            # some BMCs answer 401 on the service root until logged in: read it again now
            self.root = parse(ServiceRootDoc, self.get(ROOT), ROOT)
        else:
            try:
                self.root = parse(ServiceRootDoc, self._client.root_resp.dict, ROOT)
            except JsonDecodingError:
                raise ParseError("the service root is not valid JSON", path="$",
                                 source=f"{self.name} {ROOT}") from None
        return self.root

    def _login_once(self) -> None:
        self._session_auth = False
        try:
            self._client.login(auth="session")
            self._session_auth = True
        except InvalidCredentialsError:
            raise RedfishAuthError(f"{self.name} refused our credentials (HTTP 401)",
                                   hint="check the BMC user name and password in the credentials file") from None
        except SessionCreationError as exc:
            if "HTTP 403" in str(exc):
                raise RedfishAuthError(f"{self.name} refused our credentials (HTTP 403)",
                                       hint="the account lacks the Login privilege") from None
            if re.search(r"HTTP 5\d\d", str(exc)):
                raise ServerDownOrUnreachableError(str(exc)) from None
            # no usable SessionService: fall back to Basic authentication on every request
            log.info("%s: session login failed (%s); using Basic authentication", self.name,
                     str(exc).splitlines()[0])
            try:
                self._client.login(auth="basic")
            except InvalidCredentialsError:
                raise RedfishAuthError(f"{self.name} refused our credentials (HTTP 401, Basic)",
                                       hint="check the BMC user name and password") from None
        self._logged_in = True

    def _relogin(self) -> None:
        """A new session on the same BMC (the old one is gone: nothing to log out)."""
        try:
            self._login_once()
        except (RetriesExhaustedError, ServerDownOrUnreachableError) as exc:
            raise self._transport_error(exc, "POST", "SessionService/Sessions") from None

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
