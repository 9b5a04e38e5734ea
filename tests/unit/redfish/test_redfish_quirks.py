"""Vendor quirks are data: the YAML loads, entries match by make/model, overrides are checked."""

from __future__ import annotations

import pytest

from bringup.errors import ConfigError
from bringup.redfish.quirks import QuirkBook, load_book, quirks_for


def test_shipped_quirks_file_is_valid_and_documented():
    book = load_book()
    assert book.vendors
    for entry in book.vendors:
        assert entry.source.startswith("https://") and len(entry.why) > 40


def test_supermicro_sends_the_boot_mode():
    q = quirks_for("Supermicro", "SYS-821GE-TNHR")
    assert q.boot_override_mode == "UEFI" and q.applied == ["supermicro-boot-override-mode"]


def test_unknown_vendor_gets_defaults():
    q = quirks_for("Contoso", "3500")
    assert q.boot_override_mode is None and q.expand and q.applied == []


def test_overrides_apply_last_and_unknown_keys_fail():
    assert quirks_for("Supermicro", None, {"boot_override_mode": None}).boot_override_mode is None
    with pytest.raises(ConfigError, match="unknown Redfish quirk"):
        quirks_for("Supermicro", None, {"no_such_quirk": True})


def test_model_match_and_order():
    book = QuirkBook.model_validate({
        "defaults": {"expand": True},
        "vendors": [
            {"name": "a", "match": {"manufacturer": "Acme"}, "set": {"expand": False}, "why": "w", "source": "s"},
            {"name": "b", "match": {"manufacturer": "Acme", "model": "^X2"}, "set": {"expand": True},
             "why": "w", "source": "s"},
        ]})
    assert quirks_for("Acme", "X100", book=book).expand is False
    assert quirks_for("Acme", "X200", book=book).expand is True
    assert quirks_for("Acme", "X200", book=book).applied == ["a", "b"]
