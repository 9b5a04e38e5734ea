"""A Prefect worker loads a flow with ``flows/`` on ``sys.path``: a module there named like a
top-level package shadows it (``flows/burnin.py`` once hid the burn-in agent, and the
readiness gate's parsers failed to import in every deployment)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_no_flow_module_shadows_a_top_level_package():
    packages = {p.name for p in REPO.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in (REPO / "flows").glob("*.py")}
    assert not packages & modules, packages & modules


def test_every_deployment_entrypoint_loads_as_a_worker_loads_it(monkeypatch):
    import sys

    import yaml
    from prefect.utilities.importtools import import_object

    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the loader inserts flows/: undone after the test
    for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]:
        flow = import_object(d["entrypoint"])
        assert flow.name == d["entrypoint"].rsplit(":", 1)[1].replace("_", "-"), d["entrypoint"]
