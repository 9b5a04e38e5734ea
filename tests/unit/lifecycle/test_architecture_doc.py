"""docs/architecture.md agrees with the code: its state table is the lifecycle's states
with each handler's steps, resources and success state; its transition table is exactly
the transitions the engine allows; its diagram draws no transition the code forbids and
every one it allows but ``force``; its concerns section names every package of bringup/.

A state, step or transition added to (or removed from) ``bringup/lifecycle/table.py``, or a
package added under ``bringup/``, fails here until the page says so too.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from bringup.lifecycle.table import ALLOWED, TABLE, State

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "architecture.md"
TICKED = re.compile(r"`([^`]+)`")


def _text() -> str:
    return DOC.read_text(encoding="utf-8")


def _section(text: str, title: str) -> str:
    """The body of the ``## ``/``### `` section named ``title``, up to the next heading of
    the same or a higher level."""
    m = re.search(rf"^(#+) {re.escape(title)}\s*$", text, flags=re.MULTILINE)
    assert m, f"docs/architecture.md has no section {title!r}"
    level = len(m.group(1))
    rest = text[m.end():]
    end = re.search(rf"^#{{1,{level}}} ", rest, flags=re.MULTILINE)
    return rest[:end.start()] if end else rest


def _table(text: str, first_header: str) -> list[list[str]]:
    """The body rows (cells stripped) of the markdown table whose first header cell is
    ``first_header``."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and cells[0] == first_header:
            rows = []
            for row in lines[i + 2:]:  # skip the header and its |---| line
                if not row.lstrip().startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    raise AssertionError(f"docs/architecture.md has no table headed {first_header!r}")


def _states(cell: str) -> list[State]:
    names = TICKED.findall(cell)
    unknown = [n for n in names if n not in {s.value for s in State}]
    assert not unknown, f"docs/architecture.md names states the code does not have: {unknown}"
    return [State(n) for n in names]


def test_state_table_is_the_lifecycle_table():
    rows = _table(_section(_text(), "States and handlers"), "state")
    documented = {}
    for cells in rows:
        (state,) = _states(cells[0])
        assert state not in documented, f"state {state} is in the table twice"
        steps = tuple((name, tuple(u.strip() for u in uses.split(",") if u.strip()))
                      for name, uses in re.findall(r"`(\w+)`(?:\s*\[([^\]]*)\])?", cells[1]))
        success = _states(cells[2])
        documented[state] = (steps, success[0] if success else None)
    assert set(documented) == set(State), (
        f"states in the doc but not the code: {sorted(set(documented) - set(State))}; "
        f"in the code but not the doc: {sorted(set(State) - set(documented))}")
    for state in State:
        handler = TABLE.get(state)
        want = ((tuple((st.name, st.uses) for st in handler.steps), handler.success) if handler
                else ((), None))
        assert documented[state] == want, f"{state}: the doc says {documented[state]}, the code {want}"


def _documented_transitions() -> set[tuple[State, State]]:
    rows = _table(_section(_text(), "Transitions"), "from")
    out: set[tuple[State, State]] = set()
    for cells in rows:
        sources, (dst,) = _states(cells[0]), _states(cells[1])
        assert sources, f"a transition row without a source state: {cells}"
        out |= {(src, dst) for src in sources}
    return out


def test_transition_table_is_exactly_what_the_engine_allows():
    documented = _documented_transitions()
    assert documented == ALLOWED, (
        f"in the doc but not allowed by the code: {sorted(documented - ALLOWED)}; "
        f"allowed by the code but not in the doc: {sorted(ALLOWED - documented)}")


def _diagram() -> set[tuple[State, State]]:
    body = _section(_text(), "Transitions")
    m = re.search(r"```mermaid\n(.*?)```", body, flags=re.DOTALL)
    assert m and "stateDiagram-v2" in m.group(1), "the Transitions section has no mermaid stateDiagram-v2"
    edges = set()
    for src, dst in re.findall(r"^\s*(\S+)\s*-->\s*(\w+)", m.group(1), flags=re.MULTILINE):
        if src == "[*]":
            continue
        edges.add((State(src), State(dst)))
    return edges


def test_diagram_draws_every_allowed_transition_but_force():
    drawn = _diagram()
    force = {(s, State.PLANNED) for s in State}
    assert drawn <= ALLOWED, f"the diagram draws transitions the code forbids: {sorted(drawn - ALLOWED)}"
    missing = ALLOWED - force - drawn
    assert not missing, f"the diagram lacks allowed transitions: {sorted(missing)}"


def test_states_and_transitions_checks_would_catch_a_change(monkeypatch):
    """The checks above compare with the code, not with a copy: a state's handler changed
    in the table makes them fail."""
    from bringup.lifecycle import table

    changed = dict(TABLE)
    changed[State.BURNED_IN] = table.Handler((table.Step("judge"),), State.VALIDATING)
    monkeypatch.setattr(sys.modules[__name__], "TABLE", changed)
    with pytest.raises(AssertionError):
        test_state_table_is_the_lifecycle_table()
    monkeypatch.setattr(sys.modules[__name__], "ALLOWED", ALLOWED | {(State.INSPECTION, State.ACTIVE)})
    with pytest.raises(AssertionError):
        test_transition_table_is_exactly_what_the_engine_allows()


def test_concerns_name_every_package_of_bringup():
    body = _section(_text(), "Concerns: the packages of `bringup/`")
    named = {m.rstrip("/").removeprefix("bringup/") for m in re.findall(r"`(bringup/\w+/)`", body)}
    packages = {p.name for p in (REPO / "bringup").iterdir() if (p / "__init__.py").is_file()}
    assert packages, "no packages found under bringup/"
    assert packages <= named, f"packages of bringup/ the concerns section does not describe: {sorted(packages - named)}"
    assert named <= packages, f"the concerns section describes packages that are gone: {sorted(named - packages)}"
