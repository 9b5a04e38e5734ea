"""Parsing Redfish documents: typed models, ParseError naming the URI and JSON path."""

from __future__ import annotations

import pytest

from bringup.errors import ParseError
from bringup.redfish import Credentials
from bringup.redfish.models import EthernetInterfaceDoc, ProcessorDoc, SystemDoc, parse

URI = "/redfish/v1/Systems/1/EthernetInterfaces/cx0"


def test_missing_mac_names_uri_and_path():
    with pytest.raises(ParseError) as err:
        parse(EthernetInterfaceDoc, {"Id": "cx0"}, URI)
    assert str(err.value).startswith(f"{URI} $.MACAddress: is missing")
    assert err.value.path == "$.MACAddress" and err.value.source == URI


def test_malformed_mac_names_uri_and_path():
    with pytest.raises(ParseError, match=r"\$\.MACAddress: .*'02:00' is not a MAC"):
        parse(EthernetInterfaceDoc, {"Id": "cx0", "MACAddress": "02:00"}, URI)


def test_mac_is_normalised():
    doc = parse(EthernetInterfaceDoc, {"Id": "cx0", "MACAddress": "AA-BB-CC-DD-EE-0F"}, URI)
    assert doc.MACAddress == "aa:bb:cc:dd:ee:0f"


def test_nested_path_is_reported():
    with pytest.raises(ParseError) as err:
        parse(ProcessorDoc, {"Id": "GPU0", "MemorySummary": {"TotalMemorySizeMiB": "lots"}}, "/p")
    assert err.value.path == "$.MemorySummary.TotalMemorySizeMiB"


def test_not_an_object():
    with pytest.raises(ParseError, match="expected a JSON object, got list"):
        parse(SystemDoc, [1, 2], "/redfish/v1/Systems/1")


def test_power_state_is_required():
    with pytest.raises(ParseError, match=r"\$\.PowerState"):
        parse(SystemDoc, {"Id": "1"}, "/redfish/v1/Systems/1")


def test_credentials_repr_hides_the_password():
    creds = Credentials("admin", "s3cret-pw")
    assert "s3cret-pw" not in repr(creds) and "s3cret-pw" not in str(creds)
    assert creds.password == "s3cret-pw"
