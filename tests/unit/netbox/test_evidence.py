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


def test_many_nodes_documents_are_read_a_chunk_of_entries_at_a_time():
    j = FakeJournal()
    asked = []
    texts = j.journal_texts
    j.journal_texts = lambda ids: (asked.append(list(ids)), texts(ids))[1]
    store = EvidenceStore(j)
    nodes = []
    for i in range(5):
        cf = {"bringup_evidence": EvidenceStore.index_update({}, [store.put(i, "verdict", {"figures": {"n": i}})])}
        nodes.append((f"n{i}", cf))
    nodes.append(("none", {}))                                   # no verdict yet: left out
    gone = {"bringup_evidence": EvidenceStore.index_update({}, [store.put(9, "verdict", {"x": 1})])}
    del j.entries[max(j.entries)]
    nodes.append(("gone", gone))                                 # its entry deleted: left out, not an error
    docs = store.get_many(nodes, "verdict", chunk=2)
    assert docs == {f"n{i}": {"figures": {"n": i}} for i in range(5)}
    assert [len(a) for a in asked] == [2, 2, 2]                  # 6 entries, 2 at a time


# --- digests: a document's figures recorded beside it ---------------------------------------------
DOC = {"checks": [{"name": "nccl", "busbw": 476.3}], "raw": "x" * 200}


def test_a_digest_is_read_from_the_head_without_the_document():
    head = "## Burn-in document\n\n" + evidence.digest_block("burnin", DOC, {"v": 1, "busbw": 476.3})
    blocks, rec = encode("burnin", DOC)
    found = evidence.read_digest(head + "\n\n" + blocks[0])
    assert (found.kind, found.sha256, found.data) == ("burnin", rec["sha256"], {"v": 1, "busbw": 476.3})
    assert evidence.digest_problem("burnin", found, rec["sha256"]) is None
    assert decode("burnin", [head + "\n\n" + blocks[0]]) == DOC  # the document reads as before


def test_evidence_without_a_digest_and_notes_have_none():
    blocks, _ = encode("burnin", DOC)
    assert evidence.read_digest("## Burn-in document\n\n" + blocks[0]) is None  # recorded before digests
    assert evidence.read_digest("## Quarantined\n\n- burn_in failed") is None
    # a digest-like text inside the document is not the entry's digest
    inner, _ = encode("note", {"text": "```bringup-digest kind=burnin sha256=x\n{}\n```"})
    assert evidence.read_digest(inner[0]) is None


def test_a_cut_digest_is_an_error():
    block = evidence.digest_block("verdict", {"status": "pass"}, {"v": 1, "status": "pass"})
    with pytest.raises(ParseError, match="cut"):
        evidence.read_digest(block.rsplit("\n", 1)[0])
    cut = evidence.read_digest(block.replace('"status":"pass"', '"status":"pa'))
    with pytest.raises(ParseError, match="not JSON"):
        cut.data  # noqa: B018 - reading it is the test


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda b: b.replace("476.3", "999.0"), "checksum"),                       # figures edited by hand
    (lambda b: b.replace("kind=burnin", "kind=verdict"), "not of this burnin"),  # moved to another kind
])
def test_an_edited_digest_is_a_problem(edit, expected):
    sha = evidence.sha256_of(DOC)
    found = evidence.read_digest(edit(evidence.digest_block("burnin", DOC, {"v": 1, "busbw": 476.3})))
    assert expected in evidence.digest_problem("burnin", found, sha)


def test_a_digest_of_another_document_or_other_figures_is_a_problem():
    other = evidence.read_digest(evidence.digest_block("burnin", {"other": 1}, {"v": 1, "busbw": 476.3}))
    assert "not of this burnin document" in evidence.digest_problem("burnin", other, evidence.sha256_of(DOC))
    mine = evidence.read_digest(evidence.digest_block("burnin", DOC, {"v": 1, "busbw": 1.0}))
    sha = evidence.sha256_of(DOC)
    assert evidence.digest_problem("burnin", mine, sha, fresh={"v": 1, "busbw": 1.0}) is None
    assert "figures are not its document's" in evidence.digest_problem("burnin", mine, sha, fresh={"v": 1, "busbw": 476.3})


def test_show_fetches_the_document_and_says_what_is_wrong_with_its_digest():
    j = FakeJournal()
    store = EvidenceStore(j)
    summarize = lambda doc: {"v": 1, "busbw": doc["checks"][0]["busbw"]}
    ref = store.put(7, "burnin", DOC, summary=evidence.digest_block("burnin", DOC, summarize(DOC)))
    cf = {"bringup_evidence": EvidenceStore.index_update({}, [ref])}
    assert store.show("n1", cf, "burnin", summarize) == (DOC, None)
    first = ref.entries[0]
    j.entries[first] = j.entries[first].replace('"busbw":476.3', '"busbw":400.0', 1)  # the digest, not the document
    document, problem = store.show("n1", cf, "burnin", summarize)
    assert document == DOC and "checksum" in problem
    old = store.put(7, "burnin", DOC, summary="recorded before digests")
    assert store.show("n1", {"bringup_evidence": EvidenceStore.index_update({}, [old])}, "burnin") == (DOC, None)
