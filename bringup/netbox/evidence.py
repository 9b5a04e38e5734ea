"""Evidence that outlives the worker: every stage's documents, kept in NetBox.

Where, and why there:

- Each document is a **journal entry** on the device (``extras.journal_entries``): the
  human summary first, then the document in a fenced block marked ``bringup-evidence``.
  Journal entries are append-only history that NetBox shows on the device's Journal tab,
  any worker with the API token can read them back, and a rerun adds a new entry instead
  of overwriting the old one (nothing is lost).
- The device's JSON custom field ``bringup_evidence`` is the **index**: for each kind
  the ids of the entries holding the latest document, its SHA-256 and size. One device
  read (which every step does anyway) says where to look; one more GET fetches it.
- Not a JSON custom field per document: custom fields come back with every device read
  and listing, so a fleet listing would carry every burn-in document. NetBox 4.7 has no
  generic file attachments (image attachments only), and config contexts are
  configuration, not results.

Size limits: journal comments are a PostgreSQL ``text`` column (no length limit), but a
whole request body goes through NetBox's web server (nginx's default
``client_max_body_size`` is 1 MiB; NetBox's own docs raise it to 25 MiB). So a document
of more than :data:`COMPRESS_OVER` bytes of JSON is gzip-compressed and base64-encoded
(burn-in documents shrink 5-10x), and the encoded text is split over as many entries as
needed, :data:`CHUNK` characters each. Nothing is ever truncated; a reader checks the
SHA-256 of what it reassembled.

Digests: a fleet report needs a few figures of each of thousands of documents, not the
documents. A step may record a compact **digest** of a document beside it, in the head of the
document's first journal entry (:func:`digest_block`: a fenced ``bringup-digest`` block
naming the kind, the SHA-256 of the document it was made from and a checksum of its own
text bound to that SHA-256), so it costs no extra request and comes back with the same
journal listing; :func:`read_digest` reads it without touching the document. What a digest
holds is the recording step's business (:mod:`bringup.acceptance.digest`);
:func:`digest_problem` says when one does not stand for its document (another document's,
edited by hand, or, checked against the decoded document, other figures): a finding.

The codec below is pure; :class:`EvidenceStore` does the NetBox I/O through the adapter.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from bringup.errors import BringupError, NetBoxNotFound, ParseError

MARKER = "bringup-evidence"
DIGEST_MARKER = "bringup-digest"
COMPRESS_OVER = 64 * 1024
CHUNK = 512 * 1024
INDEX_FIELD = "bringup_evidence"

_BLOCK = re.compile(r"```" + MARKER + r" (?P<meta>[^\n]*)\n(?P<body>.*?)\n```", re.DOTALL)


# --- pure codec ------------------------------------------------------------------------------
def canonical(document: Any) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)


def sha256_of(document: Any) -> str:
    """The SHA-256 that :func:`encode` records for ``document`` (of its canonical JSON)."""
    return hashlib.sha256(canonical(document).encode()).hexdigest()


def encode(kind: str, document: Any) -> tuple[list[str], dict[str, Any]]:
    """The fenced blocks that hold ``document`` (one per journal entry), and its index
    record (without the entry ids)."""
    text = canonical(document)
    raw = text.encode()
    digest = hashlib.sha256(raw).hexdigest()
    if len(raw) > COMPRESS_OVER:
        encoding, payload = "gzip+base64", base64.b64encode(gzip.compress(raw, mtime=0)).decode()
    else:
        encoding, payload = "json", json.dumps(document, sort_keys=True, indent=1, default=str)
    parts = [payload[i:i + CHUNK] for i in range(0, len(payload), CHUNK)] or [""]
    blocks = [f"```{MARKER} kind={kind} part={n}/{len(parts)} encoding={encoding} sha256={digest}\n{p}\n```"
              for n, p in enumerate(parts, 1)]
    return blocks, {"sha256": digest, "bytes": len(raw), "encoding": encoding, "parts": len(parts)}


def _meta(line: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def block_meta(text: str) -> dict[str, str] | None:
    """The header of the evidence block in a journal entry's comments (kind, part,
    encoding, sha256); None when the entry holds no evidence (a note, a quarantine)."""
    # the header line only: a regex over the whole (large) block is what dominated a fleet
    # load; decode() still checks the block is whole
    head = "```" + MARKER + " "
    start = (text or "").find(head)
    end = text.find("\n", start) if start >= 0 else -1
    return _meta(text[start + len(head):end]) if end >= 0 else None


@dataclass(frozen=True)
class Digest:
    """A digest read from a journal entry: its kind, the SHA-256 of the document it was made
    from, and its JSON text (not yet parsed: a reader validates it into its own model)."""

    kind: str
    sha256: str
    text: str
    #: the digest's own checksum (:func:`digest_checksum`), as recorded
    checksum: str = ""

    @property
    def data(self) -> Any:
        """The digest's JSON; :class:`ParseError` when it is not JSON."""
        try:
            return json.loads(self.text)
        except ValueError as exc:
            raise ParseError(f"the digest is not JSON: {exc}", path="$") from None


def digest_block(kind: str, document: Any, digest: Any) -> str:
    """The fenced block that records ``digest`` of ``document``: appended to the summary of
    the evidence (the head of its first journal entry), it is stored with the document."""
    # in the extractor's order (a report's columns follow it); the checksum covers the text as written
    body = json.dumps(digest, separators=(",", ":"), default=str)
    sha = sha256_of(document)
    return f"```{DIGEST_MARKER} kind={kind} sha256={sha} check={digest_checksum(sha, body)}\n{body}\n```"


def digest_checksum(sha256: str, text: str) -> str:
    """The checksum of a digest's text, bound to its document's SHA-256: a digest edited by
    hand, or pasted from another document, shows without decoding the document."""
    return hashlib.sha256(f"{sha256}\n{text}".encode()).hexdigest()


def read_digest(text: str) -> Digest | None:
    """The digest in the head of a journal entry (before its evidence block); None when it
    has none (evidence recorded before digests, a later part, a note). A digest block that is
    cut is a :class:`ParseError`."""
    text = text or ""
    head = "```" + DIGEST_MARKER + " "
    end = text.find("```" + MARKER + " ")
    start = text.find(head, 0, end if end >= 0 else len(text))
    if start < 0:
        return None
    eol = text.find("\n", start)
    close = text.find("\n```", eol)
    if eol < 0 or close < 0:
        raise ParseError("the digest block is cut", path="$", hint="the entry was edited; rerun the stage")
    meta = _meta(text[start + len(head):eol])
    return Digest(meta.get("kind", ""), meta.get("sha256", ""), text[eol + 1:close], meta.get("check", ""))


def digest_problem(kind: str, digest: Digest, sha256: str, fresh: Any = None) -> str | None:
    """Why ``digest`` does not stand for the ``kind`` document of checksum ``sha256``, or None.
    ``fresh``, when given, is the digest made again from the document: the recorded one must
    hold the same figures."""
    if digest.kind != kind or digest.sha256 != sha256:
        return (f"the digest is of {digest.kind or '?'} document {digest.sha256[:12] or '?'}, not of this "
                f"{kind} document {sha256[:12]}: it was edited or moved")
    if digest.checksum != digest_checksum(digest.sha256, digest.text):
        return "the digest does not match its checksum: it was edited or cut"
    if fresh is not None and canonical(fresh) != canonical(digest.data):  # data: ParseError if not JSON
        return "the digest's figures are not its document's: it was edited, or made by a faulty extractor"
    return None


def decode(kind: str, texts: list[str], *, source: str = "") -> Any:
    """Reassemble a document from the comments of its journal entries, in part order.
    Anything missing, mixed up or altered is a :class:`ParseError` naming what."""
    parts: dict[int, str] = {}
    meta: dict[str, str] = {}
    for i, text in enumerate(texts):
        m = _BLOCK.search(text or "")
        if not m:
            raise ParseError(f"journal entry {i + 1} of {len(texts)} holds no {MARKER} block", path="$",
                             source=source, hint="the entry was edited or is not bringup's; rerun the stage")
        meta = _meta(m.group("meta"))
        if meta.get("kind") != kind:
            raise ParseError(f"entry holds evidence of kind {meta.get('kind')!r}, not {kind!r}", source=source)
        n, _, total = meta.get("part", "1/1").partition("/")
        parts[int(n)] = m.group("body")
        if len(parts) > int(total or 1):
            raise ParseError("more parts than the entries announce", source=source)
    total = int(meta.get("part", "1/1").partition("/")[2] or 1)
    if sorted(parts) != list(range(1, total + 1)):
        raise ParseError(f"parts {sorted(parts)} of {total} found; some entries are missing", source=source,
                         hint="rerun the stage to record the evidence again")
    payload = "".join(parts[i] for i in range(1, total + 1))
    try:
        if meta.get("encoding") == "gzip+base64":
            raw = gzip.decompress(base64.b64decode(payload))
        elif meta.get("encoding") == "json":
            document = json.loads(payload)
            raw = canonical(document).encode()
        else:
            raise ParseError(f"unknown evidence encoding {meta.get('encoding')!r}", source=source)
        if hashlib.sha256(raw).hexdigest() != meta.get("sha256"):
            raise ParseError("the evidence does not match its SHA-256: it was altered or cut", source=source,
                             hint="rerun the stage to record the evidence again")
        # parsed once: the canonical text of ``document`` is what the checksum covers
        return document if meta.get("encoding") == "json" else json.loads(raw)
    except ParseError:
        raise
    except (ValueError, OSError, EOFError, zlib.error) as exc:  # cut or altered gzip data: zlib.error
        raise ParseError(f"the evidence cannot be decoded: {exc}", path="$", source=source) from None


# --- NetBox I/O ----------------------------------------------------------------------------------
class JournalPort(Protocol):
    """What the store needs of :class:`bringup.netbox.adapter.NetBox`."""

    def journal(self, node_id: int, comments: str, kind: str = "info") -> int: ...
    def journal_texts(self, entry_ids: list[int]) -> dict[int, str]: ...


@dataclass(frozen=True)
class Ref:
    """Where one document lives: its journal entries and checksum."""

    kind: str
    entries: tuple[int, ...]
    sha256: str
    bytes: int
    at: str

    def index_record(self) -> dict[str, Any]:
        return {"entries": list(self.entries), "sha256": self.sha256, "bytes": self.bytes, "at": self.at}


class EvidenceStore:
    """Journal entries + the device's index field. The index field is written by the
    lifecycle together with the node's other fields (see :meth:`index_update`)."""

    def __init__(self, journal: JournalPort) -> None:
        self.journal = journal

    def put(self, node_id: int, kind: str, document: Any, *, summary: str = "", style: str = "info") -> Ref:
        blocks, rec = encode(kind, document)
        ids = []
        for n, block in enumerate(blocks, 1):
            head = summary if n == 1 else f"{kind} evidence, part {n} of {len(blocks)}"
            ids.append(self.journal.journal(node_id, (head.rstrip() + "\n\n" if head else "") + block, kind=style))
        return Ref(kind, tuple(ids), rec["sha256"], rec["bytes"], datetime.now(UTC).isoformat(timespec="seconds"))

    @staticmethod
    def index_of(custom_fields: dict[str, Any]) -> dict[str, Any]:
        index = custom_fields.get(INDEX_FIELD) or {}
        return index if isinstance(index, dict) else {}

    @classmethod
    def index_update(cls, custom_fields: dict[str, Any], refs: list[Ref]) -> dict[str, Any]:
        """The new value of the index field once ``refs`` are recorded."""
        index = dict(cls.index_of(custom_fields))
        docs = dict(index.get("docs") or {})
        for ref in refs:
            docs[ref.kind] = ref.index_record()
        index["docs"] = docs
        return index

    def has(self, custom_fields: dict[str, Any], kind: str) -> bool:
        return kind in (self.index_of(custom_fields).get("docs") or {})

    def get(self, node: str, custom_fields: dict[str, Any], kind: str) -> Any:
        """The latest ``kind`` document of a node; NetBoxNotFound when none was recorded."""
        texts, source = self._texts(node, custom_fields, kind)
        return decode(kind, texts, source=source)

    def get_many(self, nodes: list[tuple[str, dict[str, Any]]], kind: str, chunk: int = 100) -> dict[str, Any]:
        """The latest ``kind`` document of each node that has one (name -> document), the
        journal entries of all of them read ``chunk`` at a time: a fleet's rows in a few
        requests, not one per node. A node whose document cannot be read is left out."""
        wanted: dict[str, list[int]] = {}
        for name, fields in nodes:
            rec = (self.index_of(fields).get("docs") or {}).get(kind)
            ids = [int(i) for i in (rec or {}).get("entries", []) if str(i).isdigit()]
            if ids:
                wanted[name] = ids
        every = sorted({i for ids in wanted.values() for i in ids})
        texts: dict[int, str] = {}
        for at in range(0, len(every), chunk):
            texts.update(self.journal.journal_texts(every[at:at + chunk]))
        out: dict[str, Any] = {}
        for name, ids in wanted.items():
            if all(i in texts for i in ids):
                try:
                    out[name] = decode(kind, [texts[i] for i in ids], source=f"{name} evidence {kind!r}")
                except BringupError:
                    continue
        return out

    def _texts(self, node: str, custom_fields: dict[str, Any], kind: str) -> tuple[list[str], str]:
        rec = (self.index_of(custom_fields).get("docs") or {}).get(kind)
        source = f"{node} evidence {kind!r}"
        if not rec:
            raise NetBoxNotFound(f"{node}: no {kind} evidence is recorded in NetBox",
                                 hint="the stage that produces it has not finished; rerun it")
        ids = [int(i) for i in rec.get("entries", [])]
        texts = self.journal.journal_texts(ids)
        missing = [i for i in ids if i not in texts]
        if missing:
            raise ParseError(f"journal entries {missing} are gone from NetBox", source=source,
                             hint="someone deleted them; rerun the stage to record the evidence again")
        return [texts[i] for i in ids], source

    def show(self, node: str, custom_fields: dict[str, Any], kind: str,
             summarize: Callable[[Any], Any] | None = None) -> tuple[Any, str | None]:
        """The latest ``kind`` document, fetched to show it, and what is wrong with the digest
        recorded with it (None: none recorded, or it agrees); ``summarize`` makes the digest
        again from the document, to compare the figures too. Same requests as :meth:`get`."""
        texts, source = self._texts(node, custom_fields, kind)
        document = decode(kind, texts, source=source)
        try:
            digest = read_digest(texts[0] if texts else "")
        except ParseError as exc:
            return document, f"the digest cannot be read: {exc}"
        if digest is None:
            return document, None
        fresh = summarize(document) if summarize is not None else None
        return document, digest_problem(kind, digest, sha256_of(document), fresh)
