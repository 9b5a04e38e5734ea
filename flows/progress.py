"""What the main job shows while it waits on a deployment run: each node's stage, live.

The demo (``make demo``) starts the ``commission`` deployment and used to block on it for
minutes without a word. It now polls NetBox (the source of truth the run writes) and the
run's state: on a terminal a live table (node, stage, status, reason) with a count per
stage; in a log (``make demo > file``) one line per stage change, so the progress is
readable afterwards too. The pure parts (changes between two looks, the table) are here
apart from the polling loop.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from bringup.retry import Backoff, Timeout
from bringup.retry import poll as poll_until

#: NetBox is read at most this often: a few reads a minute cost it nothing
POLL_S = 5.0


@dataclass(frozen=True)
class Seen:
    """One node as one look at NetBox saw it."""

    node: str
    stage: str
    status: str = ""
    reason: str = ""


def look(records: Iterable) -> dict[str, Seen]:
    """NetBox node records (:class:`bringup.netbox.adapter.NodeRecord`) as ``Seen``, by name."""
    return {r.name: Seen(r.name, r.stage or "-", r.status or "",
                         str((r.custom_fields or {}).get("bringup_reason") or ""))
            for r in records}


def changes(before: Mapping[str, Seen], now: Mapping[str, Seen]) -> list[str]:
    """One line per node whose stage moved (or that appeared) since the last look."""
    lines = []
    for name in sorted(now):
        old, new = before.get(name), now[name]
        if old is None or old.stage != new.stage:
            line = f"{name}: {old.stage if old else '?'} -> {new.stage}"
            if new.stage == "quarantined" and new.reason:
                line += f" ({new.reason})"
            lines.append(line)
    return lines


def table(now: Mapping[str, Seen], run_state: str, elapsed_s: float) -> Group:
    """The live view: a count per stage, then one row per node."""
    counts = Counter(s.stage for s in now.values())
    head = Text(f"run {run_state} after {elapsed_s:.0f}s   "
                + "   ".join(f"{stage}: {n}" for stage, n in sorted(counts.items())))
    t = Table(show_lines=False)
    for col in ("node", "stage", "status", "reason"):
        t.add_column(col, overflow="fold")
    for name in sorted(now):
        s = now[name]
        style = "red" if s.stage == "quarantined" else "green" if s.stage == "active" else ""
        t.add_row(s.node, Text(s.stage, style=style), s.status, s.reason or "-")
    return Group(head, t)


def watch(read_nodes: Callable[[], Iterable], read_state: Callable[[], tuple[str, bool]], *,
          timeout: float, console: Console | None = None, poll: float = POLL_S) -> str:
    """Show progress until the run is final (``read_state`` returns its name and whether it
    is final) or ``timeout`` seconds pass; returns the last state's name. A failed read of
    NetBox is shown and tried again at the next poll: the run goes on without us."""
    console = console or Console()
    t0 = time.monotonic()
    before: dict[str, Seen] = {}
    state, final = read_state()

    def tick() -> None:
        nonlocal before, state, final
        state, final = read_state()
        try:
            now = look(read_nodes())
        except Exception as exc:  # noqa: BLE001 - a progress view must not stop the job
            console.print(f"(could not read NetBox for progress: {exc})")
            return
        if not console.is_terminal:
            for line in changes(before, now):
                console.print(f"{time.monotonic() - t0:6.0f}s  {line}", highlight=False, soft_wrap=True)
        before = now

    def until_final(shown: Callable[[], None]) -> None:
        def look_again() -> bool:
            tick()
            shown()
            return final
        if final:
            return
        try:
            poll_until(look_again, timeout=timeout - (time.monotonic() - t0), what="the run's progress",
                       done=bool, backoff=Backoff(first=poll, factor=1.0), sleep=time.sleep)
        except Timeout:
            pass  # the run goes on; the caller says what a watch that ran out means

    if console.is_terminal:
        with Live(table(before, state, 0), console=console, refresh_per_second=1) as live:
            until_final(lambda: live.update(table(before, state, time.monotonic() - t0)))
    else:
        until_final(lambda: None)
        tick()  # the last stages, after the run ended
    return state
