"""A burn-in result document cut short on its way back is an unknown, not a stuck node:
the node is quarantined with a reason naming the file and the parse error, no stale
``pass`` stays in NetBox, and a rerun burns in again.

The document is cut for real: the burn-in playbook runs the agent on the simulated node
and fetches its document, then the fetched file is truncated to half before bringup reads
it (what a full disk or a killed copy leaves)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("flow8b")]

NODE = "ft-r02-n02"          # healthy in flow8.yaml
PARTNER = "ft-r02-n01"       # healthy, its pool's fabric partner in the rerun
FILE = "/var/lib/bringup/burnin/result.json"


@pytest.fixture
def fresh(seeded):
    """This module's flow8 NetBox, as on day one (``seeded``: a database of its own)."""
    return seeded


def _commission(*nodes):
    from flows import runtime
    from flows.commission import commission
    runtime.forget()
    # batches=0: walked in this process, where the test's stand-in for run_playbook is
    return commission(nodes=list(nodes), force=True, batches=0)


def _burnin_entries(nb, rec):
    return [e for e in nb.journal_entries(rec.id) if "kind=burnin " in e["comments"]]


# more than 120 s (3-7 minutes): the node installed and burned in, then burned in again
# beside its fabric partner (installed too) through the pool's fabric test to admission
def test_a_cut_result_document_quarantines_naming_the_file_and_a_rerun_burns_in_again(
        fresh, flow_env, prefect_server, monkeypatch):
    from bringup.provision import ansible_steps
    real = ansible_steps.run_playbook
    cut = []

    def run_and_cut(playbook, hosts, extra, access, **kw):
        result = real(playbook, hosts, extra, access, **kw)
        if playbook == "burnin.yml":
            for name in hosts:
                out = Path(extra["burnin_fetch_dir"]) / f"{name}.json"
                text = out.read_text()
                out.write_text(text[: len(text) // 2])
                cut.append(name)
        return result

    monkeypatch.setattr(ansible_steps, "run_playbook", run_and_cut)
    _commission(NODE)
    assert cut == [NODE]
    rec = fresh.nodes(names=[NODE])[0]
    assert rec.stage == "quarantined", rec.stage
    reason = rec.custom_fields["bringup_reason"]
    assert FILE in reason and "not JSON" in reason, reason
    assert rec.custom_fields["burnin_status"] == "incomplete"
    assert len(_burnin_entries(fresh, rec)) == 1      # the cut document is kept as evidence

    monkeypatch.setattr(ansible_steps, "run_playbook", real)
    _commission(NODE, PARTNER)     # on through the pool's fabric test, with a partner
    rec = fresh.nodes(names=[NODE])[0]
    assert len(_burnin_entries(fresh, rec)) == 2      # burned in again
    assert rec.stage == "active", (rec.stage, rec.custom_fields.get("bringup_reason"))
    assert rec.custom_fields["burnin_status"] == "pass"
