"""Redfish answers -> exceptions: the one status map of the BMC adapter.

:func:`raise_for_response` is the only place that decides what an HTTP status from a BMC
means (sushy's ``exceptions.raise_for_response`` is the model). The error body's
messages are read from ``error.@Message.ExtendedInfo`` whether the BMC sends a list (the
standard) or a single object (HPE iLO, see tests/fixtures/redfish/hpe-ilo), and whether
a message names itself ``MessageId`` or ``MessageID`` (iLO 4).

:func:`decode_json` decides what a body means before any of that: JSON, nothing, broken
JSON (a :class:`ParseError`), or not JSON at all, such as the HTML of a web server or of a
BMC's web UI answering where its Redfish service was expected (a :class:`RedfishError`
quoting the content type and the first characters, never the page).
"""

from __future__ import annotations

import json
from typing import Any

from bringup.errors import (
    ParseError,
    RedfishAuthError,
    RedfishError,
    RedfishNotFoundError,
    RedfishRequestError,
    RedfishServerError,
    RedfishTimeoutError,
)

#: statuses a retry may cure (the BMC is busy or failing for now)
TRANSIENT = frozenset({408, 429, 500, 502, 503, 504})
#: how much of a body that is not JSON an error quotes: enough to tell a page, never the page
QUOTE = 24


def decode_json(body: bytes | str | None, content_type: str, method: str, path: str, who: str, *,
                lenient: bool = False) -> Any:
    """The JSON of a Redfish answer (None for an empty body). A body that is not JSON is None
    when ``lenient`` (an error status's body: the status map decides); else a body whose media
    type is not JSON, or that starts with ``<`` (HTML, XML), is a :class:`RedfishError` saying
    the address does not serve Redfish, and anything else broken JSON (a :class:`ParseError`)."""
    raw = body.encode() if isinstance(body, str) else (body or b"")
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:   # JSONDecodeError, UnicodeDecodeError
        if lenient:
            return None
    media = content_type.split(";")[0].strip().lower()
    start = raw.lstrip()[:QUOTE].decode("utf-8", "replace")
    if start.startswith("<") or (media and "json" not in media):
        kind = "HTML" if "html" in media or start[:1] == "<" else media
        raise RedfishError(f"{who}: {method} {path} answered {kind}, not Redfish JSON "
                           f"(Content-Type {media or 'none'}, starting {start!r})",
                           hint="the URL or port points at a web server or the BMC's web UI, not its Redfish "
                                "service: give the address and port where /redfish/v1/ answers JSON")
    raise ParseError(f"the body ({len(raw)} bytes) is not valid JSON; it may be truncated", path="$",
                     source=f"{who} {path}", hint="retry; if it persists the BMC firmware is faulty")



def extended_info(doc: Any) -> list[dict[str, Any]]:
    """The message objects of an error (or settings) body, as a list whatever the BMC sent."""
    if not isinstance(doc, dict):
        return []
    found: list[Any] = []
    err = doc.get("error")
    for holder in (err if isinstance(err, dict) else {}, doc):
        info = holder.get("@Message.ExtendedInfo")
        if isinstance(info, dict):
            found.append(info)
        elif isinstance(info, list):
            found.extend(info)
    if not found and isinstance(doc.get("Messages"), list):   # iLO 4's pre-Redfish envelope
        found.extend(doc["Messages"])
    return [m for m in found if isinstance(m, dict)]


def message_id(msg: dict[str, Any]) -> str:
    return str(msg.get("MessageId") or msg.get("MessageID") or "")


def messages(doc: Any) -> list[str]:
    """Human text of each message (its Message, else its id), then the error's own message."""
    out = []
    for m in extended_info(doc):
        text = m.get("Message") or message_id(m)
        if text:
            out.append(str(text))
    err = doc.get("error") if isinstance(doc, dict) else None
    if not out and isinstance(err, dict) and err.get("message"):
        out.append(str(err["message"]))
    return out


def first_message(doc: Any) -> str:
    found = messages(doc)
    return found[0] if found else ""


def raise_for_response(status: int, doc: Any, method: str, path: str, who: str) -> None:
    """Raise the error class that says what ``status`` means; return for 1xx-3xx."""
    if status < 400:
        return
    msg = first_message(doc)
    detail = f": {msg}" if msg else ""
    where = f"{who}: {method} {path}"
    if status in (401, 403):
        hint = ("the account lacks the privilege for this" if status == 403
                else "check the BMC user name and password in the credentials file")
        raise RedfishAuthError(f"{who} refused our credentials for {method} {path} (HTTP {status}){detail}",
                               hint=hint)
    if status == 404:
        raise RedfishNotFoundError(f"{where}: no such resource (HTTP 404){detail}",
                                   hint="the BMC does not implement it")
    if status == 408:
        raise RedfishTimeoutError(f"{where} timed out on the BMC (HTTP 408){detail}", hint="retry later")
    if status in TRANSIENT:
        raise RedfishServerError(f"{where} answered HTTP {status}{detail}",
                                 hint="the BMC is busy or failed internally; retry later or reset the BMC")
    if status < 500:
        raise RedfishRequestError(f"{where} was refused (HTTP {status}){detail}",
                                  hint="see the BMC's message; the request may not be supported by this BMC")
    raise RedfishError(f"{where} failed with HTTP {status}{detail}", hint="see the BMC's message")
