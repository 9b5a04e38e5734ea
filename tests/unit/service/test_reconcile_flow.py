"""The reconcile flow, the end of every flow's walk (``converge``), the site runtime's
reconcile from NetBox and ``bringup reconcile``: no Prefect server (artifacts are
recorded by a stand-in), no NetBox, no API server."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml
from test_reconcile import FakeCluster, isolated

from bringup.lifecycle.results import NodeReport
from flows import reconcile as flow_mod
from flows import runtime


class FakeNetBox:
    def __init__(self, *nodes) -> None:
        self.recs = [SimpleNamespace(name=n, stage=s, custom_fields={"bringup_reason": r}) for n, s, r in nodes]
        self.asked: list[dict] = []

    def nodes(self, **filters):
        self.asked.append(filters)
        names = filters.get("names")
        return [r for r in self.recs if not names or r.name in names]


@pytest.fixture
def site_runtime(tmp_path):
    """The real SiteRuntime over a settings file, its NetBox and cluster replaced by fakes."""
    token = tmp_path / "token"
    token.write_text("t\n")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"site": "lab-east", "netbox_url": "http://netbox.invalid",
                                   "netbox_token_file": str(token)}))
    rt = runtime.SiteRuntime(str(cfg))
    kube = FakeCluster("q1", "d1", "a1")
    rt.ctx._netbox = FakeNetBox(("q1", "quarantined", "xid 79: fell off the bus"), ("d1", "draining", ""),
                                ("a1", "active", ""), ("p1", "planned", ""))
    rt.ctx.__dict__["kube"] = kube
    runtime.use(rt)
    yield rt, kube
    runtime.use(None)


@pytest.fixture
def artifacts(monkeypatch):
    made: list[dict] = []
    monkeypatch.setattr(flow_mod, "create_table_artifact", lambda **kw: made.append(kw))
    return made


def test_the_scheduled_flow_reconciles_the_settings_site_and_publishes_the_table(site_runtime, artifacts):
    rt, kube = site_runtime
    rows = flow_mod.reconcile.fn()
    assert rt.ctx.netbox.asked == [{"site": "lab-east", "rack": None, "tag": None, "names": None}]
    assert {r["node"]: r["action"] for r in rows} == {"q1": "cordon and taint", "d1": "cordon"}
    assert isolated(kube, "q1") and kube.nodes["d1"]["unschedulable"] and not kube.nodes["a1"]["unschedulable"]
    assert [a["key"] for a in artifacts] == ["reconcile-reconcile"] and artifacts[0]["table"] == rows


def test_the_flow_fails_loudly_naming_the_nodes_it_could_not_fix(site_runtime, artifacts):
    from flows.walk import RunFailed
    _rt, kube = site_runtime
    kube.down = -1
    with pytest.raises(RunFailed, match=r"q1: NetBox says quarantined.*unreachable"):
        flow_mod.reconcile.fn()
    assert artifacts and all(row["error"] for row in artifacts[0]["table"])    # the table is published first


def test_every_flow_ends_by_converging_its_own_nodes(site_runtime, artifacts):
    """What fan_out calls with the walk's reports: their final stage and reasons."""
    _rt, kube = site_runtime
    reports = [NodeReport(node="q1", rack="r1", verdict="quarantined", stage="quarantined", reasons=["xid 79"]),
               NodeReport(node="a1", rack="r1", verdict="admitted", stage="active")]
    assert flow_mod.converge(reports, prefix="commission") == []
    assert isolated(kube, "q1") and [a["key"] for a in artifacts] == ["commission-reconcile"]
    kube.nodes["q1"] = {"unschedulable": False, "taints": []}
    kube.down = -1
    unsettled = flow_mod.converge(reports, prefix="commission")
    assert len(unsettled) == 1 and unsettled[0].startswith("q1: NetBox says quarantined")


def test_a_run_with_every_node_in_service_publishes_nothing_and_needs_no_cluster(site_runtime, artifacts):
    rt, _kube = site_runtime
    del rt.ctx.__dict__["kube"]      # settings without a kubeconfig: not needed
    reports = [NodeReport(node="a1", rack="r1", verdict="admitted", stage="active")]
    assert flow_mod.converge(reports) == [] and artifacts == []


def test_a_runtime_without_a_cluster_has_nothing_to_reconcile(artifacts, tmp_path):
    from bench.simruntime import SimRuntime  # the bench's: no cluster, its reconcile says so
    runtime.use(SimRuntime(str(tmp_path), {}))
    try:
        reports = [NodeReport(node="q1", rack="r1", verdict="quarantined", stage="quarantined")]
        assert flow_mod.converge(reports) == [] and artifacts == []
    finally:
        runtime.use(None)


def test_fan_out_converges_after_publishing_and_fails_the_run_on_what_is_unsettled():
    import inspect

    from flows import walk
    src = inspect.getsource(walk.fan_out)
    assert src.index("publish_fleet(") < src.index("converge(reports") < src.index("raise RunFailed")


def test_the_deployment_is_scheduled():
    from bringup.resources import project_file
    deps = {d["name"]: d for d in yaml.safe_load(project_file().read_text())["deployments"]}
    dep = deps["reconcile"]
    assert dep["entrypoint"] == "flows/reconcile.py:reconcile" and dep["schedules"][0]["active"]
    assert dep["schedules"][0]["cron"] == "*/10 * * * *"


def test_the_cli_prints_the_table_and_exits_1_when_unsettled(site_runtime, monkeypatch):
    from typer.testing import CliRunner

    from bringup_cli import app, flows_cmd
    rt, kube = site_runtime
    monkeypatch.setattr(flows_cmd, "_ctx", lambda config: rt.ctx)
    res = CliRunner().invoke(app, ["reconcile", "--site", "lab-east"])
    assert res.exit_code == 0, res.output
    assert "q1" in res.output and "d1" in res.output and isolated(kube, "q1")   # (rich wraps the cells)
    kube.nodes["q1"] = {"unschedulable": False, "taints": []}
    kube.down = -1
    res = CliRunner().invoke(app, ["reconcile", "--site", "lab-east"])
    assert res.exit_code == 1 and "unreach" in res.output
