"""Login goes through the one status map (``responses.raise_for_response``).

DMTF's redfish library reports a refused session only as an exception whose text holds
the status (``SessionCreationError("HTTP 403: ...")``); bringup sends the session POST
itself and judges its reply like any other. The library's HTTP client is replaced here
by a script of replies: no socket.
"""

from __future__ import annotations

import base64
import json
import time

import pytest
import requests
from redfish.rest.v1 import RetriesExhaustedError

from bringup.errors import RedfishAuthError, RedfishServerError, RedfishTLSError
from bringup.redfish.session import SESSIONS, Credentials, Session

ROOT = {"@odata.id": "/redfish/v1/", "Systems": {"@odata.id": "/redfish/v1/Systems"},
        "Links": {"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}}}
CREATED = {"@odata.id": "/redfish/v1/SessionService/Sessions/7", "Id": "7"}


class Resp:
    """What the library's RestResponse offers the session: status, raw body, dict, headers."""

    def __init__(self, status: int, doc=None, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.dict = doc
        self.read = json.dumps(doc).encode() if doc is not None else b""
        self._headers = headers or {}

    def getheaders(self):
        return list(self._headers.items())


def tls_failure() -> RetriesExhaustedError:
    err = RetriesExhaustedError()
    err.__cause__ = requests.exceptions.SSLError("certificate verify failed: unable to get local issuer")
    return err


class Script:
    """The library's client: each (method, path) answers its replies in turn, the last forever."""

    def __init__(self, routes: dict[tuple[str, str], list]) -> None:
        self.routes = {k: list(v) for k, v in routes.items()}
        self.sent: list[tuple[str, str, object]] = []
        self.session_key = self.location = self.auth = None
        self.logged_out = False
        self._session = requests.Session()

    def _answer(self, method: str, path: str, kw: dict) -> Resp:
        self.sent.append((method, path, kw.get("body")))
        replies = self.routes[(method, path)]
        reply = replies[0] if len(replies) == 1 else replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def get(self, path, **kw):
        return self._answer("GET", path, kw)

    def post(self, path, **kw):
        return self._answer("POST", path, kw)

    def set_session_key(self, key):
        self.session_key = key

    def set_session_location(self, location):
        self.location = location

    def set_authorization_key(self, key):
        self.auth = key

    def logout(self):
        self.logged_out = True


def session(routes, retries: int = 0) -> tuple[Session, Script]:
    s = Session("10.0.0.5", Credentials("admin", "pw"), insecure=True, retries=retries)
    s._client = script = Script(routes)
    return s, script


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


def login_answers(*answers) -> dict:
    return {("GET", "/redfish/v1/"): [Resp(200, ROOT)], ("POST", SESSIONS): list(answers)}


def test_a_created_session_hands_its_token_to_the_library():
    s, client = session(login_answers(Resp(201, CREATED, {"X-Auth-Token": "tok", "Location": CREATED["@odata.id"]})))
    assert s.login().Systems.odata_id == "/redfish/v1/Systems"
    assert (client.session_key, client.location, client.auth) == ("tok", CREATED["@odata.id"], None)
    assert client.sent[1] == ("POST", SESSIONS, {"UserName": "admin", "Password": "pw"})
    s.close()
    assert client.logged_out


@pytest.mark.parametrize("status,hint", [(401, "user name and password"), (403, "lacks the privilege")])
def test_a_refused_login_is_the_maps_auth_error_and_no_basic_fallback(status, hint):
    body = {"error": {"@Message.ExtendedInfo": [{"MessageId": "Base.1.8.InsufficientPrivilege",
                                                 "Message": "The account may not log in."}]}}
    s, client = session(login_answers(Resp(status, body)), retries=3)
    with pytest.raises(RedfishAuthError) as err:
        s.login()
    assert f"HTTP {status}" in str(err.value) and hint in str(err.value) and "may not log in" in str(err.value)
    assert not err.value.transient and err.value.controller_fault
    assert client.auth is None and client.session_key is None
    assert [m for m, *_ in client.sent] == ["GET", "POST"]        # refused is final: not tried again
    assert "pw" not in str(err.value)


def test_a_busy_session_service_is_tried_again_then_logs_in():
    s, client = session(login_answers(Resp(503), Resp(201, CREATED, {"X-Auth-Token": "tok"})), retries=1)
    s.login()
    assert client.session_key == "tok" and client.location == CREATED["@odata.id"]


def test_a_session_service_still_busy_after_the_retries_is_transient():
    s, _ = session(login_answers(Resp(503)), retries=1)
    with pytest.raises(RedfishServerError, match="HTTP 503") as err:
        s.login()
    assert err.value.transient


@pytest.mark.parametrize("status", [400, 404, 405])
def test_a_service_without_sessions_gets_basic_auth_and_a_wrong_password_is_still_an_auth_error(status):
    routes = login_answers(Resp(status))
    routes[("GET", "/redfish/v1/Systems")] = [Resp(401)]
    s, client = session(routes)
    s.login()
    assert client.auth == "Basic " + base64.b64encode(b"admin:pw").decode() and client.session_key is None
    with pytest.raises(RedfishAuthError, match="HTTP 401"):
        s.get("/redfish/v1/Systems")                     # Basic: no relogin, the map decides
    assert [m for m, *_ in client.sent].count("POST") == 1


def test_a_password_that_must_change_is_an_auth_error_and_the_session_is_closed():
    must = {**CREATED, "@Message.ExtendedInfo": [{"MessageId": "Base.1.8.PasswordChangeRequired",
                                                  "MessageArgs": ["/redfish/v1/AccountService/Accounts/2"]}]}
    s, client = session(login_answers(Resp(201, must, {"X-Auth-Token": "tok"})))
    with pytest.raises(RedfishAuthError, match="must change its password"):
        s.login()
    s.close()
    assert client.logged_out


def test_a_service_root_that_wants_a_login_is_read_again_after_it():
    routes = login_answers(Resp(201, CREATED, {"X-Auth-Token": "tok"}))
    routes[("GET", "/redfish/v1/")] = [Resp(401), Resp(200, ROOT)]
    s, client = session(routes)
    assert s.login().Systems.odata_id == "/redfish/v1/Systems"
    assert [(m, p) for m, p, _ in client.sent] == [("GET", "/redfish/v1/"), ("POST", SESSIONS), ("GET", "/redfish/v1/")]


def test_an_expired_session_is_replaced_once():
    routes = login_answers(Resp(201, CREATED, {"X-Auth-Token": "old"}), Resp(201, CREATED, {"X-Auth-Token": "new"}))
    routes[("GET", "/redfish/v1/Systems")] = [Resp(401), Resp(200, {"Members": []})]
    s, client = session(routes)
    s.login()
    assert s.get("/redfish/v1/Systems") == {"Members": []} and client.session_key == "new"


def test_a_tls_failure_is_ours_names_the_ca_setting_and_is_not_tried_again():
    s, client = session({("GET", "/redfish/v1/"): [tls_failure()]}, retries=3)
    with pytest.raises(RedfishTLSError) as err:
        s.login()
    assert err.value.controller_fault and not err.value.transient
    assert "bmc_ca_bundle" in str(err.value) and len(client.sent) == 1
