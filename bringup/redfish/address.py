"""A BMC's address as an operator or NetBox gives it -> the base URL of its Redfish service.

Accepted: ``host``, ``host:port``, ``https://host[:port]``, ``http://host[:port]`` (the
session mounts its adapter for plain HTTP too: a lab, or a BMC behind a TLS proxy),
``[v6]``, ``[v6]:port`` and a bare IPv6 address. Without a scheme it is HTTPS, on the
address's own port, else the caller's default (443). Anything else (a space, a port that
is not 1..65535, a path, a query, user info, another scheme) is a :class:`ConfigError`
saying what to give instead: before this module, ``host:port`` became
``https://host:port:443`` and failed later as an unreachable BMC.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from bringup.errors import ConfigError

#: a DNS name (labels of letters, digits, '-', '_'; an optional final dot) or an IPv4 address
_HOST = re.compile(r"(?=.{1,253}\.?$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_][A-Za-z0-9_-]{0,62})*\.?")
SCHEMES = ("https", "http")
FORMS = "host, host:port, https://host[:port] or [IPv6]:port"


def _bad(address: str, why: str) -> ConfigError:
    return ConfigError(f"BMC address {address!r}: {why}", hint=f"give {FORMS}")


def _port(address: str, text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise _bad(address, f"port {text!r} is not a number from 1 to 65535")
    return int(text)


def _host(address: str, host: str) -> str:
    """``host`` as it goes in a URL (an IPv6 address in brackets)."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            return f"[{ipaddress.IPv6Address(host).compressed}]"
        except ValueError:
            raise _bad(address, f"{host!r} in brackets is not an IPv6 address") from None
    if not _HOST.fullmatch(host):
        raise _bad(address, f"{host!r} is not a host name or an IP address")
    return host


def base_url(address: str, port: int = 443) -> str:
    """The Redfish base URL (``scheme://host:port``) of the BMC at ``address``; ``port`` is used
    when the address names none and has no scheme (a scheme's own default applies otherwise)."""
    text = address.strip()
    if not text or any(c.isspace() for c in text):
        raise _bad(address, "it is empty or holds a space")
    try:   # a bare IPv6 address (fe80::1): its colons are not a port
        return f"https://[{ipaddress.IPv6Address(text).compressed}]:{port}"
    except ValueError:
        pass
    scheme = "https"
    if "://" in text:
        scheme, _, text = text.partition("://")
        scheme = scheme.lower()
        if scheme not in SCHEMES:
            raise _bad(address, f"scheme {scheme!r} is not https or http")
        default = 443 if scheme == "https" else 80
    else:
        default = port
    try:
        rest = urlsplit(f"//{text}")
    except ValueError:   # urlsplit refuses a bracketed host that is not IPv6
        raise _bad(address, "what is in brackets is not an IPv6 address") from None
    if rest.path not in ("", "/") or rest.query or rest.fragment or "?" in text or "#" in text:
        raise _bad(address, "it has a path or query; the service root /redfish/v1/ is found on its own")
    if "@" in rest.netloc:
        raise _bad(address, "user info does not go in the address; the credentials file holds it")
    hostport = rest.netloc
    if hostport.startswith("["):
        host, sep, tail = hostport.partition("]")
        host += sep
        if tail and not tail.startswith(":"):
            raise _bad(address, f"{tail!r} after the IPv6 address is not a :port")
        number = _port(address, tail[1:]) if tail else default
    elif hostport.count(":") == 1:
        host, _, text_port = hostport.partition(":")
        number = _port(address, text_port)
    elif ":" in hostport:
        raise _bad(address, "more than one ':' (an IPv6 address goes in brackets: [v6]:port)")
    else:
        host, number = hostport, default
    return f"{scheme}://{_host(address, host)}:{number}"
