"""A BMC's address -> its Redfish base URL (``bringup.redfish.address.base_url``): every form
an operator or NetBox gives, and one clear refusal for each kind of junk. Before it,
``host:port`` became ``https://host:port:443``."""

from __future__ import annotations

import pytest

from bringup.errors import ConfigError
from bringup.redfish.address import base_url


@pytest.mark.parametrize("address,url", [
    ("10.0.0.5", "https://10.0.0.5:443"),
    ("bmc-r01-n01.mgmt.example.com", "https://bmc-r01-n01.mgmt.example.com:443"),
    ("10.0.0.5:8443", "https://10.0.0.5:8443"),                       # a bare host:port is https on that port
    ("bmc1:8443", "https://bmc1:8443"),
    ("https://10.0.0.5", "https://10.0.0.5:443"),
    ("https://10.0.0.5:8443/", "https://10.0.0.5:8443"),
    ("HTTPS://Bmc1:8443", "https://Bmc1:8443"),
    ("http://10.0.0.5:8080", "http://10.0.0.5:8080"),                 # the session mounts plain HTTP too
    ("http://10.0.0.5", "http://10.0.0.5:80"),
    ("[fd00::5]:8443", "https://[fd00::5]:8443"),
    ("[fd00:0::5]", "https://[fd00::5]:443"),
    ("https://[fd00::5]:8443", "https://[fd00::5]:8443"),
    ("fd00::5", "https://[fd00::5]:443"),                             # bare IPv6: its colons are no port
    (" 10.0.0.5 ", "https://10.0.0.5:443"),
])
def test_each_form_of_address_gives_its_url(address, url):
    assert base_url(address) == url


def test_the_default_port_applies_only_without_a_scheme_or_port():
    assert base_url("10.0.0.5", 8443) == "https://10.0.0.5:8443"
    assert base_url("10.0.0.5:9443", 8443) == "https://10.0.0.5:9443"
    assert base_url("https://10.0.0.5", 8443) == "https://10.0.0.5:443"


@pytest.mark.parametrize("address,why", [
    ("bmc 1", "holds a space"),
    ("", "empty"),
    ("10.0.0.5:99999", "port '99999' is not a number from 1 to 65535"),
    ("10.0.0.5:0", "port '0'"),
    ("10.0.0.5:https", "port 'https'"),
    ("10.0.0.5:", "port ''"),
    ("10.0.0.5:8443:443", "more than one ':'"),
    ("https://10.0.0.5/redfish/v1", "has a path"),
    ("10.0.0.5/redfish", "has a path"),
    ("10.0.0.5?x=1", "has a path or query"),
    ("ftp://10.0.0.5", "scheme 'ftp'"),
    ("admin@10.0.0.5", "user info"),
    ("[zz]:8443", "not an IPv6 address"),
    ("[fd00::5]x", "not a :port"),
    ("bmc_?!", "has a path or query"),
    ("bmc*1", "not a host name"),
])
def test_junk_is_one_line_saying_what_to_give(address, why):
    with pytest.raises(ConfigError) as err:
        base_url(address)
    text = str(err.value)
    assert why in text and "\n" not in text and text.startswith(f"BMC address {address!r}")
    assert err.value.hint == "give host, host:port, https://host[:port] or [IPv6]:port"
