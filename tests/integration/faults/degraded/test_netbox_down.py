"""NetBox killed in the middle of a burn-in loses nothing: the writes pause and retry for a
bounded time, the finished burn-in is spooled on the controller's disk (the node is held,
not failed), the fleet table is still published, and the rerun, once NetBox is back,
records the spooled burn-in instead of burning in again.

This module runs its OWN NetBox (tests/ports.py role ``outage``: ``netbox-outage`` on its
own port and database) so killing it leaves the other tests' NetBox alone.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
import yaml

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("flow8c")]

NODE = "ft-r01-n01"          # healthy in flow8.yaml
OUTAGE_S = 10                # how long the records layer rides out the outage before spooling


@pytest.fixture(scope="module")
def faults_netbox(scenario_netbox, flow_fleet):
    """A NetBox of this module over a fresh clone of the pristine database, seeded with flow8."""
    srv = scenario_netbox("outage")
    nb = srv.seeded(flow_fleet)
    yield srv, nb
    srv.stop()


@pytest.fixture
def faults_config(flow_lab, faults_netbox, tmp_path):
    """A copy of the flow lab's settings pointed at this module's NetBox, with its own spool."""
    srv, _ = faults_netbox
    settings = yaml.safe_load(flow_lab.read_text())
    settings.update({"netbox_url": srv.url, "spool_dir": str(tmp_path / "spool"),
                     "netbox_outage_s": OUTAGE_S})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def _kill_netbox(srv, lab_paths) -> None:
    from lab import procs
    pid = procs.pid_of(lab_paths.run, srv.name)
    assert pid, f"{srv.name} is not running"
    os.killpg(pid, signal.SIGKILL)   # gunicorn and its workers at once, no goodbye
    procs.wait_until(lambda: not procs.port_open("127.0.0.1", srv.port), timeout=30, what="NetBox to die")


def _fleet_artifact(key: str):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                      sort=ArtifactSort.CREATED_DESC, limit=1)
    return found[0] if found else None


def _commission(config):
    from flows import runtime
    from flows.commission import commission
    runtime.forget()
    # batches=0: walked in this process, where the test's stand-in steps are
    return commission(nodes=[NODE], config=str(config), batches=0)


# more than 120 s (3-5 minutes): one node installed and burned in, the records layer's
# outage budget ridden out, then a rerun that judges it from the spool
def test_netbox_killed_mid_burn_in_loses_nothing_and_the_rerun_does_not_burn_in_again(
        faults_netbox, faults_config, flow_env, prefect_server, lab_paths, monkeypatch, tmp_path):
    from bringup import pipeline as stages
    from bringup.netbox.spool import Spool
    from flows.artifacts import _key
    srv, nb = faults_netbox
    real_burn_in = stages.STEPS["burn_in"]
    burn_ins = []

    def burn_in_then_netbox_dies(ctx, rec, params):
        result = real_burn_in(ctx, rec, params)
        burn_ins.append(rec.name)
        _kill_netbox(srv, lab_paths)       # the burn-in finished; NetBox is gone before it is recorded
        return result

    monkeypatch.setitem(stages.STEPS, "burn_in", burn_in_then_netbox_dies)
    began = time.monotonic()
    with pytest.raises(Exception, match="NetBox is unreachable|controller's side"):
        _commission(faults_config)
    took = time.monotonic() - began
    assert burn_ins == [NODE]
    # bounded: the records layer's outage budget (a few times over), not forever
    assert took < 600, took
    kept = Spool(tmp_path / "spool").pending()
    assert [(k.node, k.step) for k in kept] == [(NODE, "burn_in")]
    assert kept[0].result.evidence[0].kind == "burnin"
    fleet = _fleet_artifact(_key("commission-fleet"))
    assert fleet is not None and NODE in str(fleet.data)   # published with what the run knew

    # NetBox is back: nothing was admitted meanwhile, and the rerun records the burn-in
    srv.start()
    rec = nb.nodes(names=[NODE])[0]
    assert rec.stage == "provisioned", rec.stage
    monkeypatch.setitem(stages.STEPS, "burn_in", lambda ctx, rec, params: pytest.fail("burned in again"))
    _commission(faults_config)
    rec = nb.nodes(names=[NODE])[0]
    # judged from the spooled burn-in and on to its pool's fabric test, where it waits for
    # a partner (this NetBox has no other node of its pool past burn-in)
    assert rec.stage == "fabric" and rec.custom_fields["burnin_status"] == "pass", \
        (rec.stage, rec.custom_fields.get("bringup_reason"))
    assert "no partner for the fabric test" in rec.custom_fields["bringup_reason"]
    burnin_entries = [e for e in nb.journal_entries(rec.id) if "kind=burnin " in e["comments"]]
    assert len(burnin_entries) == 1
    assert Spool(tmp_path / "spool").pending() == []
