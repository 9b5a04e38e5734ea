"""The evidence codec: documents survive the journal whole, or fail loudly."""

from __future__ import annotations

import random

import pytest

from bringup.errors import NetBoxNotFound, ParseError
from bringup.netbox import evidence
from bringup.netbox.evidence import EvidenceStore, decode, encode


def test_small_documents_stay_readable_json():
    blocks, rec = encode("verdict", {"status": "pass", "reasons": []})
    assert len(blocks) == 1 and rec["encoding"] == "json"
    assert '"status": "pass"' in blocks[0]
    assert decode("verdict", blocks) == {"status": "pass", "reasons": []}


def test_large_documents_are_compressed_and_split_and_come_back_whole(monkeypatch):
    monkeypatch.setattr(evidence, "CHUNK", 4096)
    rng = random.Random(7)
    doc = {"samples": [[rng.random() for _ in range(8)] for _ in range(4000)]}
    blocks, rec = encode("burnin", doc)
    assert rec["encoding"] == "gzip+base64" and len(blocks) == rec["parts"] > 3
    assert decode("burnin", blocks) == doc


def test_missing_altered_or_foreign_parts_are_errors(monkeypatch):
    monkeypatch.setattr(evidence, "CHUNK", 2048)
    doc = {"x": list(range(40000))}
    blocks, _ = encode("burnin", doc)
    with pytest.raises(ParseError, match="missing"):
        decode("burnin", blocks[:-1])
    with pytest.raises(ParseError, match="discovery"):
        decode("discovery", blocks)
    small, _ = encode("verdict", {"status": "pass"})
    with pytest.raises(ParseError, match="SHA-256"):
        decode("verdict", [small[0].replace('"pass"', '"fail"')])
    with pytest.raises(ParseError, match="no bringup-evidence block"):
        decode("verdict", ["an operator's note"])


class FakeJournal:
    def __init__(self):
        self.entries: dict[int, str] = {}

    def journal(self, node_id, comments, kind="info"):
        self.entries[len(self.entries) + 1] = comments
        return len(self.entries)

    def journal_texts(self, ids):
        return {i: self.entries[i] for i in ids if i in self.entries}


def test_the_store_indexes_the_latest_document_of_each_kind():
    j = FakeJournal()
    store = EvidenceStore(j)
    cf: dict = {}
    first = store.put(7, "burnin", {"run": 1}, summary="first run")
    cf["bringup_evidence"] = EvidenceStore.index_update(cf, [first])
    second = store.put(7, "burnin", {"run": 2})
    cf["bringup_evidence"] = EvidenceStore.index_update(cf, [second])
    assert store.get("n1", cf, "burnin") == {"run": 2}
    assert j.entries[first.entries[0]].startswith("first run")   # old evidence is kept, not overwritten
    with pytest.raises(NetBoxNotFound):
        store.get("n1", cf, "verdict")
    del j.entries[second.entries[0]]
    with pytest.raises(ParseError, match="gone"):
        store.get("n1", cf, "burnin")
