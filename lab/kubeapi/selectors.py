"""Label and field selectors as the Kubernetes API accepts them in list queries.

Label selectors support equality (``a=b``, ``a==b``, ``a!=b``), sets
(``a in (x,y)``, ``a notin (x)``) and existence (``a``, ``!a``). Field selectors support
``=``, ``==`` and ``!=`` on a fixed set of fields per resource, like the real server,
which refuses other fields with 400.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Requirement = Callable[[dict[str, str]], bool]


class SelectorError(ValueError):
    """A selector the server cannot parse; answered with 400 BadRequest."""


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside ``( )``."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


_SET_RE = re.compile(r"^([A-Za-z0-9./_-]+)\s+(in|notin)\s+\(([^)]*)\)$")
_OP_RE = re.compile(r"^([A-Za-z0-9./_-]+)\s*(==|!=|=)\s*([A-Za-z0-9._-]*)$")
_KEY_RE = re.compile(r"^(!?)\s*([A-Za-z0-9./_-]+)$")


def parse_label_selector(text: str) -> list[Requirement]:
    reqs: list[Requirement] = []
    for part in _split_top(text or ""):
        if m := _SET_RE.match(part):
            key, op = m.group(1), m.group(2)
            values = {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                reqs.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                reqs.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif m := _OP_RE.match(part):
            key, op, value = m.groups()
            if op == "!=":
                reqs.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                reqs.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif m := _KEY_RE.match(part):
            neg, key = m.groups()
            if neg:
                reqs.append(lambda labels, k=key: k not in labels)
            else:
                reqs.append(lambda labels, k=key: k in labels)
        else:
            raise SelectorError(f"unable to parse requirement: {part!r}")
    return reqs


def labels_match(reqs: list[Requirement], labels: dict[str, str] | None) -> bool:
    labels = labels or {}
    return all(r(labels) for r in reqs)


def selector_from_label_selector_object(sel: dict[str, Any] | None) -> list[Requirement]:
    """A ``LabelSelector`` object (matchLabels / matchExpressions), e.g. a PDB's."""
    if sel is None:
        return [lambda labels: False]  # a nil selector selects nothing
    reqs: list[Requirement] = []
    for k, v in (sel.get("matchLabels") or {}).items():
        reqs.append(lambda labels, k=k, v=v: labels.get(k) == v)
    for expr in sel.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), set(expr.get("values") or [])
        if op == "In":
            reqs.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
        elif op == "NotIn":
            reqs.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif op == "Exists":
            reqs.append(lambda labels, k=key: k in labels)
        elif op == "DoesNotExist":
            reqs.append(lambda labels, k=key: k not in labels)
        else:
            raise SelectorError(f"unknown label selector operator {op!r}")
    return reqs


def _dig(obj: dict[str, Any], dotted: str) -> str:
    cur: Any = obj
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(text: str, allowed: set[str]) -> Callable[[dict[str, Any]], bool]:
    checks: list[Callable[[dict[str, Any]], bool]] = []
    for part in _split_top(text or ""):
        m = re.match(r"^([A-Za-z.]+)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise SelectorError(f"invalid selector: {part!r}; can't understand it")
        field, op, value = m.groups()
        if field not in allowed:
            raise SelectorError(f'field label not supported: {field}')
        if op == "!=":
            checks.append(lambda o, f=field, v=value: _dig(o, f) != v)
        else:
            checks.append(lambda o, f=field, v=value: _dig(o, f) == v)
    return lambda obj: all(c(obj) for c in checks)
