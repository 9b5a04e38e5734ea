"""flows.progress: what the demo shows while the commission run works."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from flows import progress


def rec(name, stage, status="planned", reason=""):
    return SimpleNamespace(name=name, stage=stage, status=status, custom_fields={"bringup_reason": reason})


def test_changes_name_each_stage_move_once_and_a_quarantine_with_its_reason():
    a = progress.look([rec("n1", "planned"), rec("n2", "planned")])
    b = progress.look([rec("n1", "discovered"), rec("n2", "quarantined", "failed", "GPU count 7, expected 8"),
                       rec("n3", "planned")])
    assert progress.changes(a, b) == ["n1: planned -> discovered",
                                      "n2: planned -> quarantined (GPU count 7, expected 8)",
                                      "n3: ? -> planned"]
    assert progress.changes(b, b) == []


def test_in_a_log_the_watch_prints_changes_until_the_run_is_final():
    looks = iter([[rec("n1", "planned")], [rec("n1", "provisioned")], [rec("n1", "active", "active")]])
    states = iter([("RUNNING", False), ("RUNNING", False), ("COMPLETED", True), ("COMPLETED", True)])
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    last = progress.watch(lambda: next(looks), lambda: next(states), timeout=60, console=console, poll=0)
    text = out.getvalue()
    assert last == "COMPLETED"
    assert "n1: ? -> planned" in text and "n1: planned -> provisioned" in text and "n1: provisioned -> active" in text


def test_a_netbox_read_that_fails_is_shown_and_the_watch_goes_on():
    calls = {"n": 0}

    def nodes():
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("NetBox restarting")
        return [rec("n1", "active")]
    states = iter([("RUNNING", False), ("RUNNING", False), ("COMPLETED", True), ("COMPLETED", True)])
    out = io.StringIO()
    progress.watch(nodes, lambda: next(states), timeout=60, console=Console(file=out, width=200), poll=0)
    assert "could not read NetBox for progress: NetBox restarting" in out.getvalue()
    assert "n1: ? -> active" in out.getvalue()


def test_the_live_table_counts_stages_and_marks_quarantined_nodes():
    now = progress.look([rec("n1", "active"), rec("n2", "quarantined", "failed", "XID 79"), rec("n3", "active")])
    out = io.StringIO()
    Console(file=out, width=120).print(progress.table(now, "RUNNING", 42))
    text = out.getvalue()
    assert "run RUNNING after 42s" in text and "active: 2" in text and "quarantined: 1" in text
    assert "XID 79" in text
