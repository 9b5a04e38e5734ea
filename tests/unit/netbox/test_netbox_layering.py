"""bringup/netbox is NetBox only: none of its modules imports the Kubernetes adapter or
reaches into a cluster; an admitted node's labels reach its report through a reader the
wiring (bringup.pipeline) hands in."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import bringup.netbox
from bringup.errors import KubeTransientError
from bringup.netbox.records import NetBoxRecords

NETBOX = Path(bringup.netbox.__file__).parent


def _imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_no_netbox_module_imports_or_touches_kubernetes():
    modules = sorted(NETBOX.glob("*.py"))
    assert len(modules) >= 8
    for path in modules:
        tree = ast.parse(path.read_text(), filename=str(path))
        kube_imports = [n for n in _imports(tree) if "kube" in n.split(".") or n.startswith(("kubernetes", "bringup.kube"))]
        assert not kube_imports, f"{path.name} imports {kube_imports}"
        kube_uses = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "kube"]
        assert not kube_uses, f"{path.name} reaches into the cluster (.kube) on lines {kube_uses}"


def _node():
    return SimpleNamespace(name="n1", rack="r1", stage="active", custom_fields={}, url="http://nb/n1")


def _records(**kw):
    evidence = SimpleNamespace(get_many=lambda pairs, kind: {})   # no verdict recorded
    ctx = SimpleNamespace(settings=SimpleNamespace(), evidence=evidence)  # no .kube: it must not be needed
    return NetBoxRecords(ctx, **kw)


def test_an_admitted_nodes_labels_come_from_the_reader_handed_in():
    asked = []

    def labels(name):
        asked.append(name)
        return {"bringup.io/pool": "train"}
    report = _records(labels=labels).report(_node(), "admitted")
    assert report.labels == {"bringup.io/pool": "train"} and asked == ["n1"]
    assert _records(labels=labels).report(_node(), "pending").labels == {}   # only admitted nodes are asked
    assert asked == ["n1"]


def test_without_a_reader_or_with_the_cluster_down_the_report_has_no_labels():
    assert _records().report(_node(), "admitted").labels == {}

    def down(name):
        raise KubeTransientError("API server unreachable")
    assert _records(labels=down).report(_node(), "admitted").labels == {}


def test_the_real_wiring_hands_the_records_the_clusters_labels():
    from bringup import pipeline

    kube = SimpleNamespace(node_state=lambda name: SimpleNamespace(labels={"bringup.io/rack": "r1"}))
    settings = SimpleNamespace(spool_path=lambda: Path("/nonexistent-spool"), lease_renew_every_s=71.5)
    ctx = SimpleNamespace(kube=kube, settings=settings,
                          evidence=SimpleNamespace(get_many=lambda pairs, kind: {}))
    records = pipeline.lifecycle(ctx).records
    assert records.report(_node(), "admitted").labels == {"bringup.io/rack": "r1"}


def test_a_reports_figures_come_from_the_verdict_document_unless_the_caller_has_them():
    reads = []
    evidence = SimpleNamespace(get_many=lambda pairs, kind: reads.append(kind) or
                               {name: {"figures": {"busbw": 370}} for name, _ in pairs})
    records = NetBoxRecords(SimpleNamespace(settings=SimpleNamespace(), evidence=evidence))
    assert records.report(_node(), "admitted").figures == {"busbw": 370} and reads == ["verdict"]
    # the judge's result of this run carries the same figures: nothing read back
    assert records.report(_node(), "admitted", figures={"busbw": 371}).figures == {"busbw": 371}
    assert reads == ["verdict"]
    assert _records().report(_node(), "pending").figures == {}   # no verdict yet: none


def test_many_records_are_one_read_in_the_order_asked_and_their_figures_a_few_more():
    asked = []
    nodes = [SimpleNamespace(name=n, custom_fields={"i": n}) for n in ("n2", "n1")]   # NetBox's own order
    netbox = SimpleNamespace(nodes=lambda **kw: asked.append(kw) or nodes)
    evidence = SimpleNamespace(get_many=lambda pairs, kind: {"n1": {"figures": {"busbw": 1}}, "n2": "not a doc"})
    records = NetBoxRecords(SimpleNamespace(settings=SimpleNamespace(), netbox=netbox, evidence=evidence))
    got = records.node_list(["n1", "n2"])
    assert [n.name for n in got] == ["n1", "n2"] and asked == [{"names": ["n1", "n2"], "macs": False}]
    assert records.verdict_figures(got) == {"n1": {"busbw": 1}, "n2": {}}
    assert records.node_list([]) == [] and len(asked) == 1
