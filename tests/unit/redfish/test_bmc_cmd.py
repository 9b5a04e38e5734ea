"""``bringup bmc inventory`` on bad input: one line and exit 2, never a page or a traceback.

The DMTF library's client is replaced by one that answers from recorded bodies (its own
RestResponse around a requests Response built in memory): no socket.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from redfish.rest.v1 import RestRequest, RestResponse
from typer.testing import CliRunner

from bringup.redfish import session as session_mod
from bringup_cli import app

WEBUI = (Path(__file__).resolve().parents[2] / "fixtures" / "redfish" / "not-redfish"
         / "openbmc-webui-vue-index.html").read_bytes()


class Library:
    """The library's client at ``base_url``, answering every GET with one recorded body."""

    made: list[str] = []

    def __init__(self, base_url: str, content_type: str, body: bytes) -> None:
        self.made.append(base_url)
        self.content_type, self.body = content_type, body
        self._session = requests.Session()

    def get(self, path, **kw):
        http = requests.Response()
        http.status_code, http._content = 200, self.body
        http.headers["Content-Type"] = self.content_type
        return RestResponse(RestRequest(path), http)

    def set_session_key(self, key):
        pass

    def set_authorization_key(self, key):
        pass


@pytest.fixture
def password_file(tmp_path):
    p = tmp_path / "bmc.pw"
    p.write_text("pw\n")
    p.chmod(0o600)
    return p


@pytest.fixture
def web_ui(monkeypatch):
    """Every BMC address answers with OpenBMC's web UI page (text/html, 200)."""
    Library.made = []
    monkeypatch.setattr(session_mod, "redfish_client",
                        lambda base_url, **kw: Library(base_url, "text/html", WEBUI))
    return Library.made


def inventory(address: str, password_file: Path):
    return CliRunner().invoke(app, ["bmc", "inventory", address, "--user", "admin",
                                    "--password-file", str(password_file), "--insecure"])


def test_an_html_page_is_one_line_naming_html_not_the_firmware(web_ui, password_file):
    r = inventory("https://10.0.0.5", password_file)
    assert r.exit_code == 2, r.output
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1
    assert "GET /redfish/v1/ answered HTML, not Redfish JSON (Content-Type text/html" in r.stderr
    assert "web UI" in r.stderr and "phosphor" not in r.stderr and "firmware" not in r.stderr
    assert web_ui == ["https://10.0.0.5:443"]


def test_host_and_port_without_a_scheme_is_https_on_that_port(web_ui, password_file):
    r = inventory("10.0.0.5:8443", password_file)
    assert r.exit_code == 2 and web_ui == ["https://10.0.0.5:8443"]


@pytest.mark.parametrize("address,why", [("bmc 1", "holds a space"), ("10.0.0.5:99999", "port '99999'"),
                                         ("https://10.0.0.5/redfish/v1", "has a path")])
def test_a_junk_address_is_one_line_before_any_request(web_ui, password_file, address, why):
    r = inventory(address, password_file)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [r.stderr.strip()] and why in r.stderr and r.stderr.startswith("error: BMC address")
    assert web_ui == []                                   # refused before a client was made
