"""Reading Redfish collections: ``$expand`` where served, members fetched where not.

:func:`members` is strict (any failure raises): actions use it. :class:`Reader` is what
the inventory uses: a collection or a member that answers 404, fails, or does not parse
becomes an :class:`~bringup.redfish.views.Unavailable` entry about *that* member and the
rest of the inventory stands.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from bringup.errors import ParseError, RedfishNotFoundError, RedfishRequestError, RedfishServerError
from bringup.redfish.models import CollectionDoc, parse
from bringup.redfish.session import Session
from bringup.redfish.views import Inventory

#: what one member may answer without ending the inventory (transport failures still do)
MEMBER_ERRORS = (RedfishNotFoundError, RedfishRequestError, RedfishServerError, ParseError)


def absent(doc: dict[str, Any]) -> bool:
    """A member the BMC lists for an empty place (a socket without a CPU, a slot without a DIMM)."""
    return (doc.get("Status") or {}).get("State") == "Absent"


def is_expanded(ref: dict[str, Any]) -> bool:
    """A reference that came back with its resource inlined (more than ``@odata.*`` keys)."""
    # every resource and collection has a Name: the common case without scanning the keys
    return "Name" in ref or any(not k.startswith("@odata.") for k in ref)


def split_ref(ref: str | dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """(uri, inlined document or None) of a link as found in a parent document."""
    if isinstance(ref, dict):
        return str(ref.get("@odata.id", "")), (ref if is_expanded(ref) else None)
    return ref, None


def members(session: Session, uri: str, levels: int = 1, doc: dict[str, Any] | None = None
            ) -> list[tuple[str, dict[str, Any]]]:
    """(uri, document) of every member of a collection; any failure raises."""
    out: list[tuple[str, dict[str, Any]]] = []
    page: str | None = uri
    while page:
        coll_doc = doc if doc is not None else session.get(page, session.expand_args(levels))
        doc = None
        coll = parse(CollectionDoc, coll_doc, page)
        for i, member in enumerate(coll.Members):
            mid = member.get("@odata.id")
            if not isinstance(mid, str):
                raise ParseError("member has no @odata.id", path=f"$.Members[{i}]['@odata.id']", source=page)
            out.append((mid, member if is_expanded(member) else session.get(mid, session.expand_args(levels - 1))))
        page = coll_doc.get("Members@odata.nextLink")
    return out


def _kind(exc: Exception) -> str:
    if isinstance(exc, RedfishNotFoundError):
        return "not_found"
    if isinstance(exc, ParseError):
        return "invalid"
    return "error"


class Reader:
    """Tolerant reads for one inventory: failures are noted in ``inv.unavailable``."""

    def __init__(self, session: Session, inv: Inventory) -> None:
        self.session = session
        self.inv = inv

    def note(self, uri: str, exc: Exception) -> None:
        path = exc.path if isinstance(exc, ParseError) else None
        self.inv.note(uri, _kind(exc), str(exc), path=path)  # type: ignore[arg-type]

    def get(self, uri: str, levels: int = 0) -> dict[str, Any] | None:
        try:
            return self.session.get(uri, self.session.expand_args(levels))
        except MEMBER_ERRORS as exc:
            self.note(uri, exc)
            return None

    def members(self, ref: str | dict[str, Any], levels: int = 1) -> list[tuple[str, dict[str, Any]]]:
        """Members of a collection the BMC links to (``ref``: its URI or its inlined form)."""
        uri, doc = split_ref(ref)
        out: list[tuple[str, dict[str, Any]]] = []
        page: str | None = uri
        while page:
            coll_doc = doc if doc is not None else self.get(page, levels)
            doc = None
            if coll_doc is None:
                return out
            try:
                coll = parse(CollectionDoc, coll_doc, page)
            except ParseError as exc:
                self.note(page, exc)
                return out
            for i, member in enumerate(coll.Members):
                mid = member.get("@odata.id")
                if not isinstance(mid, str):
                    self.inv.note(page, "invalid", "a member has no @odata.id", path=f"$.Members[{i}]")
                    continue
                body = member if is_expanded(member) else self.get(mid, levels - 1)
                if body is not None:
                    out.append((mid, body))
            nxt = coll_doc.get("Members@odata.nextLink")
            page = nxt if isinstance(nxt, str) else None
        return out

    def parse[M: BaseModel](self, model: type[M], doc: dict[str, Any], uri: str) -> M | None:
        try:
            return parse(model, doc, uri)
        except ParseError as exc:
            self.note(uri, exc)
            return None
