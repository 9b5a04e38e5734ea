"""Login goes through the one status map (``responses.raise_for_response``).

DMTF's redfish library reports a refused session only as an exception whose text holds
the status (``SessionCreationError("HTTP 403: ...")``); bringup sends the session POST
itself and judges its reply like any other. The library's HTTP client is replaced here
by a script of replies: no socket.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from pathlib import Path

import pytest
import requests
from redfish.rest.v1 import RestRequest, RestResponse, RetriesExhaustedError

from bringup.errors import (
    ConfigError,
    RedfishAuthError,
    RedfishError,
    RedfishNotFoundError,
    RedfishServerError,
    RedfishTLSError,
)
from bringup.redfish.session import SESSIONS, Credentials, Session

ROOT = {"@odata.id": "/redfish/v1/", "Systems": {"@odata.id": "/redfish/v1/Systems"},
        "Links": {"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}}}
CREATED = {"@odata.id": "/redfish/v1/SessionService/Sessions/7", "Id": "7"}


class Resp:
    """What the library's RestResponse offers the session: status, raw body, dict, headers."""

    def __init__(self, status: int, doc=None, headers: dict[str, str] | None = None, *, raw: bytes | None = None) -> None:
        self.status = status
        self.dict = doc
        self.read = raw if raw is not None else json.dumps(doc).encode() if doc is not None else b""
        self._headers = headers or {}

    def getheaders(self):
        return list(self._headers.items())


def tls_failure(text: str = "certificate verify failed: unable to get local issuer") -> RetriesExhaustedError:
    err = RetriesExhaustedError()
    err.__cause__ = requests.exceptions.SSLError(text)
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


FIX = Path(__file__).resolve().parents[2] / "fixtures" / "redfish"
WEBUI = (FIX / "not-redfish" / "openbmc-webui-vue-index.html").read_bytes()


def library_response(status: int, content_type: str, body: bytes) -> RestResponse:
    """What the DMTF library hands the session for an answer: its RestResponse around a
    requests Response (built here, no socket)."""
    http = requests.Response()
    http.status_code, http._content = status, body
    http.headers["Content-Type"] = content_type
    return RestResponse(RestRequest("/redfish/v1/"), http)


def test_a_web_ui_page_at_the_root_is_one_line_that_names_html_and_no_page(caplog):
    s, client = session({("GET", "/redfish/v1/"): [library_response(200, "text/html", WEBUI)]}, retries=3)
    with caplog.at_level(logging.DEBUG), pytest.raises(RedfishError) as err:
        s.login()
    text = str(err.value)
    assert "answered HTML, not Redfish JSON" in text and "text/html" in text and "'<!DOCTYPE html>" in text
    assert "\n" not in text and "phosphor" not in text and "firmware" not in text
    assert "web UI" in err.value.hint and not err.value.transient
    assert len(client.sent) == 1                              # not tried again, no session asked for
    assert "phosphor" not in caplog.text                      # the library no longer logs the page


def test_a_root_that_answers_404_is_no_redfish_service():
    s, _ = session({("GET", "/redfish/v1/"): [Resp(404, headers={"Content-Type": "text/html"}, raw=WEBUI)]})
    with pytest.raises(RedfishNotFoundError, match="https://10.0.0.5:443 has no Redfish service root") as err:
        s.login()
    assert "address and port" in err.value.hint


def test_a_port_that_answers_tls_in_plain_text_says_so():
    text = "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1000)"
    s, _ = session({("GET", "/redfish/v1/"): [tls_failure(text)]})
    with pytest.raises(RedfishTLSError, match="does not speak TLS") as err:
        s.login()
    assert "http://host:port" in err.value.hint and "WRONG_VERSION" not in str(err.value)


@pytest.mark.parametrize("address,url", [
    ("10.0.0.5:8443", "https://10.0.0.5:8443"), ("bmc-7.example.com", "https://bmc-7.example.com:443"),
    ("https://10.0.0.5", "https://10.0.0.5:443"), ("[fd00::5]:8443", "https://[fd00::5]:8443")])
def test_a_session_talks_to_the_address_it_was_given(address, url):
    assert Session(address, Credentials("a", "b"), insecure=True).base_url == url


def test_a_junk_address_is_refused_before_any_request():
    with pytest.raises(ConfigError, match="port '99999'"):
        Session("10.0.0.5:99999", Credentials("a", "b"), insecure=True)
