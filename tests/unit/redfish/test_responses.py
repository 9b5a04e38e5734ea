"""The one status map of the BMC adapter, on error bodies recorded from real BMCs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bringup.errors import (
    ParseError,
    RedfishAuthError,
    RedfishError,
    RedfishNotFoundError,
    RedfishRequestError,
    RedfishServerError,
    RedfishTimeoutError,
)
from bringup.redfish.responses import decode_json, extended_info, first_message, messages, raise_for_response

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "redfish"


def load(rel: str) -> dict:
    return json.loads((FIX / rel).read_text())


@pytest.mark.parametrize("status,cls,transient", [
    (401, RedfishAuthError, False), (403, RedfishAuthError, False), (404, RedfishNotFoundError, False),
    (400, RedfishRequestError, False), (405, RedfishRequestError, False), (412, RedfishRequestError, False),
    (408, RedfishTimeoutError, True), (429, RedfishServerError, True), (500, RedfishServerError, True),
    (503, RedfishServerError, True), (501, RedfishError, False)])
def test_each_status_means_one_class(status, cls, transient):
    with pytest.raises(cls) as err:
        raise_for_response(status, None, "GET", "/redfish/v1/Systems/1", "BMC 10.0.0.5")
    assert type(err.value) is cls and err.value.transient is transient
    assert "BMC 10.0.0.5" in str(err.value) and str(status) in str(err.value)


@pytest.mark.parametrize("status", [200, 201, 202, 204, 301])
def test_success_raises_nothing(status):
    raise_for_response(status, {"error": {"message": "ignored"}}, "PATCH", "/x", "BMC")


def test_idrac_404_body_gives_its_first_message():
    doc = load("dell-idrac9-libredfish/networkport-404-error.json")
    with pytest.raises(RedfishNotFoundError, match="entered is not found"):
        raise_for_response(404, doc, "GET", "/redfish/v1/Chassis/System.Embedded.1/...", "BMC idrac")
    assert len(extended_info(doc)) == 2


def test_ilo_extended_info_as_a_single_object_is_read_not_a_crash():
    doc = load("hpe-ilo/extended-info-single-object.json")
    assert [m["MessageId"] for m in extended_info(doc)] == ["Base.1.4.Success"]
    with pytest.raises(RedfishRequestError, match="Base.1.4.Success"):
        raise_for_response(400, doc, "PATCH", "/redfish/v1/AccountService", "BMC ilo")


def test_ilo_4_message_id_spelling_and_200_with_an_error_envelope():
    doc = load("hpe-ilo/bios-settings-patch-200.json")
    raise_for_response(200, doc, "PATCH", "/redfish/v1/Systems/1/bios/Settings", "BMC ilo")   # not an error
    assert messages(doc) == ["iLO.0.10.SystemResetRequired"]


def test_bodies_without_extended_info_fall_back_to_the_message():
    assert first_message({"error": {"message": "busy"}}) == "busy"
    assert first_message({"error": {"@Message.ExtendedInfo": "garbage"}}) == ""
    assert first_message(None) == "" and first_message("<html>") == ""


WEBUI = (FIX / "not-redfish" / "openbmc-webui-vue-index.html").read_bytes()


@pytest.mark.parametrize("content_type", ["text/html", "text/html; charset=utf-8", ""])
def test_an_html_page_is_not_redfish_json_and_is_not_quoted_whole(content_type):
    with pytest.raises(RedfishError) as err:
        decode_json(WEBUI, content_type, "GET", "/redfish/v1/", "BMC 10.0.0.5")
    text = str(err.value)
    assert type(err.value) is RedfishError and not err.value.transient
    assert "BMC 10.0.0.5: GET /redfish/v1/ answered HTML, not Redfish JSON" in text
    assert f"Content-Type {content_type.split(';')[0] or 'none'}" in text and "'<!DOCTYPE html>\\n<html la')" in text
    assert "\n" not in text and "phosphor" not in text and "firmware" not in text
    assert "web UI" in err.value.hint and "port" in err.value.hint


def test_another_media_type_is_named():
    with pytest.raises(RedfishError, match="answered text/plain, not Redfish JSON"):
        decode_json(b"Unauthorized access", "text/plain", "GET", "/redfish/v1/Systems", "BMC 10.0.0.5")


def test_broken_json_is_still_a_parse_error_naming_the_resource():
    with pytest.raises(ParseError, match=r"BMC 10.0.0.5 /redfish/v1/Systems \$: the body \(9 bytes\)"):
        decode_json(b'{"Id": "1', "application/json; charset=utf-8", "GET", "/redfish/v1/Systems", "BMC 10.0.0.5")


@pytest.mark.parametrize("body,doc", [(b"", None), (b"  \n", None), (b'{"Id": "1"}', {"Id": "1"}),
                                      ('{"Id": "1"}', {"Id": "1"})])
def test_json_and_empty_bodies_decode(body, doc):
    assert decode_json(body, "application/json", "GET", "/x", "BMC b") == doc


def test_an_error_status_page_is_left_to_the_status_map():
    assert decode_json(WEBUI, "text/html", "GET", "/redfish/v1/", "BMC b", lenient=True) is None
