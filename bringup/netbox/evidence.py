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

The codec below is pure; :class:`EvidenceStore` does the NetBox I/O through the adapter.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from bringup.errors import NetBoxNotFound, ParseError

MARKER = "bringup-evidence"
COMPRESS_OVER = 64 * 1024
CHUNK = 512 * 1024
INDEX_FIELD = "bringup_evidence"

_BLOCK = re.compile(r"```" + MARKER + r" (?P<meta>[^\n]*)\n(?P<body>.*?)\n```", re.DOTALL)


# --- pure codec ------------------------------------------------------------------------------
def canonical(document: Any) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)


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
        return decode(kind, [texts[i] for i in ids], source=source)
