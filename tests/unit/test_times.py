"""ISO times from other systems read one way (bringup.times): Z and no offset are UTC, an
offset is kept; what is not a time is None for the lenient reader and an error for the
strict one (a NetBox change log's or a lease's time must be one)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from bringup.times import parse_time, strict_time


@pytest.mark.parametrize(("text", "want"), [
    ("2026-12-06T10:00:00Z", datetime(2026, 12, 6, 10, tzinfo=UTC)),
    ("2026-12-06T10:00:00", datetime(2026, 12, 6, 10, tzinfo=UTC)),
    ("2026-12-06T11:00:00+01:00", datetime(2026, 12, 6, 11, tzinfo=timezone(timedelta(hours=1)))),
    ("2026-12-06T10:00:00.123456+00:00", datetime(2026, 12, 6, 10, 0, 0, 123456, tzinfo=UTC)),
])
def test_times_both_readers_agree_on(text, want):
    assert parse_time(text) == want == strict_time(text)


@pytest.mark.parametrize("text", [None, "", "yesterday", 1733479200, "2026-13-01T00:00:00Z"])
def test_what_is_not_a_time(text):
    assert parse_time(text) is None
    with pytest.raises(ValueError, match="is not an ISO 8601 time"):
        strict_time(text)
