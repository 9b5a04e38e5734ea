"""Redfish answers -> exceptions: the one status map of the BMC adapter.

:func:`raise_for_response` is the only place that decides what an HTTP status from a BMC
means (sushy's ``exceptions.raise_for_response`` is the model). The error body's
messages are read from ``error.@Message.ExtendedInfo`` whether the BMC sends a list (the
standard) or a single object (HPE iLO, see tests/fixtures/redfish/hpe-ilo), and whether
a message names itself ``MessageId`` or ``MessageID`` (iLO 4).
"""

from __future__ import annotations

from typing import Any

from bringup.errors import (
    RedfishAuthError,
    RedfishError,
    RedfishNotFoundError,
    RedfishRequestError,
    RedfishServerError,
    RedfishTimeoutError,
)

#: statuses a retry may cure (the BMC is busy or failing for now)
TRANSIENT = frozenset({408, 429, 500, 502, 503, 504})


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
