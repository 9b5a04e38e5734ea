"""ISO 8601 times as other systems write them (Redfish, NetBox, Kubernetes), read one way."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def strict_time(text: str) -> datetime:
    """``text`` as an aware datetime, read as :func:`parse_time` reads it, for a value that
    must be a time (a NetBox change log's, a lease's): anything else raises ValueError."""
    at = parse_time(text)
    if at is None:
        raise ValueError(f"{text!r} is not an ISO 8601 time")
    return at


def parse_time(text: Any) -> datetime | None:
    """``text`` as an aware datetime: a ``Z`` suffix is UTC, a time without an offset is
    taken as UTC; anything that is not such a time (None, empty, not a string) is None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)
