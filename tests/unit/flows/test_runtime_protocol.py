"""The Runtime protocol is complete: every method a flow calls on a runtime is declared
in it, the flows call them directly (no ``getattr`` fallback that silently allows
everything), and every runtime (the site's, the bench's, the tests' fake) implements all
of them, the bench saying explicitly what it does not do."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from runtime_fakes import FakeRuntime, UnexpectedCall

from bench.simruntime import NO_GUARD, SimRuntime
from bringup.service.blastradius import Request
from bringup.service.reconcile import Target
from flows import artifacts, guarded, runtime
from flows import reconcile as reconcile_flow

FLOWS = Path(runtime.__file__).parent


def declared() -> set[str]:
    return {n for n, v in vars(runtime.Runtime).items() if callable(v) and not n.startswith("_")}


def called_by_flows() -> set[str]:
    """Methods called on ``runtime.get(...)`` or on a variable holding it (``rt``)."""
    names: set[str] = set()
    for path in FLOWS.glob("*.py"):
        text = path.read_text()
        names |= set(re.findall(r"runtime\.get\([^)]*\)\.(\w+)\(", text))
        names |= set(re.findall(r"\brt\.(\w+)\(", text))
    return names


def test_the_protocol_declares_every_method_the_flows_call():
    assert declared() == {"lifecycle", "select", "due_for_reburnin", "fabric_test", "reconcile", "watch",
                          "guard", "report", "accepts_after_admission", "quarantine_gpus",
                          "report_fault", "handoff_requests", "handoff"}
    assert called_by_flows() <= declared(), called_by_flows() - declared()
    # guard, reconcile and report included: they used to be optional
    assert {"guard", "reconcile", "report", "watch", "quarantine_gpus", "report_fault", "handoff"} <= called_by_flows()


def test_no_flow_asks_a_runtime_whether_it_has_a_method():
    for path in FLOWS.glob("*.py"):
        assert not re.search(r"getattr\((runtime|rt)\b", path.read_text()), path.name


@pytest.mark.parametrize("impl", [runtime.SiteRuntime, SimRuntime, FakeRuntime])
def test_every_runtime_implements_the_whole_protocol(impl):
    for name in declared():
        method = getattr(impl, name, None)
        assert callable(method), f"{impl.__name__} lacks {name}"
        want = [p for p in inspect.signature(getattr(runtime.Runtime, name)).parameters if p != "self"]
        got = [p for p in inspect.signature(method).parameters if p != "self"]
        assert got[:len(want)] == want or "selection" in want, (impl.__name__, name, got, want)


@pytest.fixture
def bench(tmp_path):
    rt = SimRuntime(str(tmp_path), {})
    runtime.use(rt)
    yield rt
    runtime.use(None)


def test_the_bench_says_what_it_does_not_do(bench):
    decisions = bench.guard([Request("n1", "drain", "xid 79"), Request("n2", "quarantine")])
    assert [(d.node, d.allowed, d.message) for d in decisions] == [("n1", True, NO_GUARD), ("n2", True, NO_GUARD)]
    assert bench.reconcile([Target("n1", "quarantined", "xid 79")]) == []
    assert bench.reconcile(None, site="s") == []
    assert bench.report("commission-x") is None
    with pytest.raises(NotImplementedError, match="no health watch in the bench"):
        bench.watch("n1")


def test_flows_over_the_bench_allow_every_node_and_publish_nothing(bench, monkeypatch):
    published: list = []
    monkeypatch.setattr(guarded, "create_table_artifact", lambda **kw: published.append(kw))
    monkeypatch.setattr(reconcile_flow, "create_table_artifact", lambda **kw: published.append(kw))
    monkeypatch.setattr(artifacts, "create_link_artifact", lambda **kw: published.append(kw))
    selected = [type("S", (), {"name": n})() for n in ("n1", "n2")]
    decisions = guarded.ask([Request("n1", "drain", "due")], prefix="reburnin")
    assert guarded.allowed(selected, decisions) == selected
    assert reconcile_flow.converge([]) == []
    artifacts.publish_report(bench)
    assert published == []


def test_a_fake_runtime_names_what_the_flow_asked_for_unexpectedly():
    runtime.use(FakeRuntime())
    try:
        with pytest.raises(UnexpectedCall, match=r"runtime\.guard"):
            guarded.ask([Request("n1", "drain")], prefix="x")
    finally:
        runtime.use(None)
