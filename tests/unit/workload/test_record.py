"""The verdict in NetBox (the pool's context, each node's journal) and a failed pool's
new nodes kept out of service through the lifecycle's hold."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bringup.errors import ConfigError, KubeTransientError
from bringup.kube.jobs import JobView, PodView
from bringup.workload.policy import Verdict
from bringup.workload.pool import accept_pool
from bringup.workload.record import CONTEXT_KEY, journal_text, keep_out, record_verdict


class FakeNetBox:
    def __init__(self, records=()):
        self.records = list(records)
        self.objects: dict[int, dict] = {}
        self.journals: list[tuple[int, str, str]] = []

    def nodes(self, tag=None):
        return [r for r in self.records if tag == f"pool-{r.pool_name}"]

    def get_object(self, endpoint, **key):
        return next((o for o in self.objects.values() if o["name"] == key["name"]), None)

    def create_object(self, endpoint, fields):
        obj = {"id": len(self.objects) + 1, **fields}
        self.objects[obj["id"]] = obj
        return obj

    def update_object(self, endpoint, obj_id, fields):
        self.objects[obj_id].update(fields)

    def journal(self, node_id, comments, kind="info"):
        self.journals.append((node_id, comments, kind))


FAILED = Verdict(pool="p", outcome="fail", reasons=["restore took 40.0 s > limit 30 s"],
                 figures={"restore_s": 40.0, "mfu": None, "throughput_ratio": 0.95}, nodes=["n1", "n2"])


def test_the_verdict_goes_on_the_pool_and_each_node_that_ran_it():
    nb = FakeNetBox()
    record_verdict(nb, FAILED, "accept-p-r1", "2026-12-03T18:00:00+00:00", {"n1": 11, "n2": 12, "n3": 13})
    (cc,) = nb.objects.values()
    assert cc["name"] == "pool-p-acceptance" and cc["tags"] == ["pool-p"] and cc["weight"] > 2000
    doc = cc["data"][CONTEXT_KEY]
    assert doc["outcome"] == "fail" and doc["figures"]["restore_s"] == 40.0 and doc["run"] == "accept-p-r1"
    assert sorted(j[0] for j in nb.journals) == [11, 12] and {j[2] for j in nb.journals} == {"danger"}
    passed = FAILED.model_copy(update={"outcome": "pass", "reasons": []})
    record_verdict(nb, passed, "accept-p-r2", "later", {"n1": 11})
    assert len(nb.objects) == 1 and cc["data"][CONTEXT_KEY]["outcome"] == "pass"   # updated, not a second one


def test_the_journal_shows_each_figure_and_unknown_ones_as_unknown():
    text = journal_text(FAILED, "accept-p-r1", "n1")
    assert "FAIL" in text and "restore took 40.0 s" in text
    assert "| mfu | unknown |" in text and "| throughput_ratio | 95.0% |" in text and "| restore_s | 40 s |" in text


def test_not_a_pass_holds_and_cordons_every_new_node_with_the_reason():
    held, cordoned = [], []

    def cordon(n, why):
        if n == "n2":
            raise KubeTransientError("API server unreachable")
        cordoned.append((n, why))
    problems = keep_out(FAILED, ["n2", "n1"], lambda n, why: held.append((n, why)), cordon)
    assert [n for n, _ in held] == ["n1", "n2"] and "restore took 40.0 s" in held[0][1]
    assert cordoned == [("n1", held[0][1])]
    assert problems == ["n2: could not cordon (API server unreachable)"]
    unknown = FAILED.model_copy(update={"outcome": "unknown", "reasons": [], "unknown": ["restore"]})
    held.clear()
    keep_out(unknown, ["n1"], lambda n, why: held.append(n), lambda n, why: None)
    assert held == ["n1"]                                          # unknown is not a pass either
    held.clear()
    keep_out(FAILED.model_copy(update={"outcome": "pass"}), ["n1"], lambda n, why: held.append(n), cordon)
    assert held == []


def _rec(name, stage="active", pool_name="p", acceptance=None, rid=1):
    return SimpleNamespace(name=name, id=rid, stage=stage, pool_name=pool_name,
                           pool={"name": pool_name, "acceptance": acceptance or {}})


class NeverAdmitted:
    def __init__(self):
        self.submitted = []

    def submit(self, docs):
        self.submitted = docs

    def job(self, ns, name):
        return JobView(admitted=False)

    def pods(self, ns, job) -> list[PodView]:
        return []

    def log(self, ns, pod):
        return ""

    def delete_pod(self, ns, pod):
        pass

    def delete_job(self, ns, name):
        pass


class Clock:
    t = 0.0

    def now(self):
        return self.t

    def sleep(self, s):
        self.t += s


def _ctx(records, **settings):
    s = {"image": "ubuntu-2404-cuda128", "acceptance_data": "/d", "acceptance_weights": "/w",
             "acceptance_checkpoints": "/c"}
    s.update(settings)
    cordons = []
    kube = SimpleNamespace(cordon=lambda n, why: cordons.append(n))
    return SimpleNamespace(netbox=FakeNetBox(records), settings=SimpleNamespace(**s), kube=kube), cordons


def test_a_pool_whose_job_is_never_admitted_fails_and_its_new_nodes_are_held():
    recs = [_rec("n1", rid=1, acceptance={"max_queue_wait_s": 5, "poll_s": 1}), _rec("n2", rid=2,
            acceptance={"max_queue_wait_s": 5, "poll_s": 1}), _rec("n3", "planned", rid=3,
            acceptance={"max_queue_wait_s": 5, "poll_s": 1})]
    ctx, cordons = _ctx(recs)
    held = []
    cluster = NeverAdmitted()
    out = accept_pool(ctx, "p", "r1", hold=lambda n, why: held.append(n), cluster=cluster, clock=Clock())
    assert out.verdict.outcome == "fail" and out.policy.max_queue_wait_s == 5
    assert [d["kind"] for d in cluster.submitted] == ["ClusterQueue", "LocalQueue", "Job"]
    assert cluster.submitted[-1]["spec"]["completions"] == 2          # the planned node is not in the cluster
    assert held == cordons == ["n1", "n2"] and out.held == ["n1", "n2"]
    (cc,) = ctx.netbox.objects.values()
    assert cc["data"][CONTEXT_KEY]["outcome"] == "fail"


@pytest.mark.parametrize("records, settings, says", [
    ([], {}, "has no nodes in NetBox"),
    ([_rec("n1", "planned")], {}, "has no node in the cluster"),
    ([_rec("n1")], {"image": ""}, "no image manifest"),
    ([_rec("n1")], {"acceptance_data": ""}, "acceptance_data"),
    ([_rec("n1", acceptance={"workers": "all"})], {}, "bringup_pool.acceptance.workers"),
    ([_rec("n1", acceptance={"x": 1}), _rec("n2")], {}, "different acceptance sections"),
])
def test_a_pool_that_cannot_be_accepted_is_one_config_error(records, settings, says):
    ctx, _ = _ctx(records, **settings)
    with pytest.raises(ConfigError, match=says):
        accept_pool(ctx, "p", "r1", hold=lambda n, why: None, cluster=NeverAdmitted(), clock=Clock())


def test_only_a_passed_acceptance_gives_accepted_throughput_per_node():
    from bringup.workload.record import accepted_per_node, latest
    nb = FakeNetBox()
    assert latest(nb, "p") is None and accepted_per_node(None) is None
    passed = FAILED.model_copy(update={"outcome": "pass", "reasons": [], "figures": {"samples_per_s": 3000.0}})
    record_verdict(nb, passed, "accept-p-r1", "t", {})
    assert accepted_per_node(latest(nb, "p")) == 1500.0                  # two nodes ran it
    record_verdict(nb, FAILED.model_copy(update={"figures": {"samples_per_s": 3000.0}}), "accept-p-r2", "t", {})
    assert accepted_per_node(latest(nb, "p")) is None
    assert accepted_per_node({"outcome": "pass", "figures": {"samples_per_s": None}, "nodes": ["a"]}) is None
