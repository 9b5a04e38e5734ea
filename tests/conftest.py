"""Session fixtures that start the lab's real services for integration tests.

Tests share the lab's PostgreSQL cluster, its Redis server and its pristine NetBox
database (so they never migrate), but run their own NetBox servers on other ports and
databases, and their own Prefect server, so a developer's running lab is left alone.

With pytest-xdist every worker gets its own of each (tests/ports.py: ports, names,
databases, Redis db). What workers share is set up under one file lock: starting
PostgreSQL and Redis, installing NetBox, writing its configuration, migrating the
pristine database. Run the suite as ``pytest -n 2 --dist loadgroup`` (``make test``):
the tests of one fleet lab carry ``xdist_group("<fleet>")`` and so run on one worker.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

import ports
import pytest
import timeline

from bringup.netbox.adapter import NetBox, connect
from bringup.sku import load_skus, nic_counts
from lab.fleet import load_fleet

REPO = Path(__file__).resolve().parent.parent
TEST_NETBOX_PORT = ports.netbox_port("test")
TEST_NETBOX_DB = ports.netbox_db("test")
TEST_REDIS_DB = ports.REDIS_DB
TEST_PREFECT_PORT = ports.PREFECT_PORT

# Prefect reads its settings once, when it is first imported (a test module importing
# flows.* at the top does that during collection): point it at this worker's test
# server now, and forbid the temporary server it would otherwise start quietly (seen:
# in-process flow runs talking to one while the rest of the test used the real one).
os.environ["PREFECT_API_URL"] = f"http://{ports.HOST}:{TEST_PREFECT_PORT}/api"
os.environ["PREFECT_SERVER_ALLOW_EPHEMERAL_MODE"] = "false"
# An xdist worker starts with COLUMNS=80 and LINES=24 in its environment, with no terminal
# (seen with pytest-xdist 3.8; a session without xdist has neither): a rich Console made
# at import then keeps 80 columns for good, and a CLI test that runs the command with a
# wider COLUMNS sees its output wrapped anyway. Leave the width to each test, as serially.
if ports.WORKER:
    for _var in ("COLUMNS", "LINES"):
        os.environ.pop(_var, None)
# The controller's private state (Ansible runner folders, spooled results, reports) is the
# test process's own, fresh each session and gone after it (every process a test starts
# inherits it): under the user's ~/.local/state, results spooled by one run of the suite,
# or by a run stopped half-way, were replayed by the next one (CI at 43fedd4). mkdtemp: 0700.
os.environ["BRINGUP_STATE_DIR"] = tempfile.mkdtemp(prefix=f"bringup-state-{ports.WORKER or 'main'}-")

#: tests that use a fleet lab (its fixed loopback addresses and ports) -> the xdist group
#: they must carry, so that one worker runs them all
FLEET_FIXTURES = {"flow_lab": "flow8", "flow8b_lab": "flow8b", "flow8c_lab": "flow8c", "fault_lab": "faults",
                  "watch_lab": "watch", "bmcsim": "bmcsim"}
#: a fixture that stands in for another's lab (tests/integration/faults/conftest.py
#: overrides ``flow_lab`` with ``flow8b_lab``, tests/integration/faults/degraded/conftest.py
#: with ``flow8c_lab``): where it is used, the other's group is not
FLEET_SHADOWS = {"flow8b_lab": "flow_lab", "flow8c_lab": "flow_lab"}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """A test of a fleet lab without its fleet's xdist group could run on a second worker
    beside the lab's other tests, on the same addresses: refuse to run at all. And refuse
    an xdist that would not honour the groups (pytest-xdist 3.8 with pytest 9.2 ignores
    them without a word: pytest-dev/pytest-xdist#1386); this runs after its own hook."""
    problems = []
    loadgroup = hasattr(config, "workerinput") and config.getvalue("loadgroup")
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        names -= {shadowed for f, shadowed in FLEET_SHADOWS.items() if f in names}
        wanted = {g for f, g in FLEET_FIXTURES.items() if f in names}
        groups = {m.args[0] if m.args else m.kwargs.get("name") for m in item.iter_markers("xdist_group")}
        if wanted and groups != wanted:
            problems.append(f"{item.nodeid}: uses the {'/'.join(sorted(wanted))} lab, marked {sorted(groups)}; "
                            "mark it pytest.mark.xdist_group(<fleet>) (tests/conftest.py FLEET_FIXTURES)")
        elif groups and loadgroup and not item.nodeid.endswith("@" + "_".join(sorted(groups))):
            problems.append(f"{item.nodeid}: pytest-xdist did not tag it with its group {sorted(groups)}: "
                            "this pytest/pytest-xdist pair ignores xdist_group (see pyproject.toml)")
    if problems:
        raise pytest.UsageError("\n  ".join(["tests that could run beside their fleet lab:", *problems]))


#: the suite's schedule (tests/timeline.py), collected by the controller from its workers
_PHASES: list = []


def pytest_runtest_logreport(report):
    if ports.WORKER:
        return      # the controller gets every worker's reports, with their start and stop
    # a report from an xdist worker carries its controller (``node``); a serial run's has none
    worker = getattr(getattr(report, "node", None), "workerinput", {}).get("workerid", "main")
    _PHASES.append(timeline.Phase(worker=worker, nodeid=report.nodeid, when=report.when,
                                  start=report.start, stop=report.stop))


def pytest_terminal_summary(terminalreporter, config):
    """Where the wall time went, beside --durations: each worker's groups and when it
    went idle (item 4 of issue #23); BRINGUP_TEST_TIMELINE=FILE keeps every phase."""
    if os.environ.get("BRINGUP_TEST_TIMELINE") and _PHASES:
        timeline.write(Path(os.environ["BRINGUP_TEST_TIMELINE"]), _PHASES)
    if getattr(config.option, "numprocesses", None) and _PHASES:
        terminalreporter.write_sep("=", "worker timeline (s from the first test)")
        for line in timeline.lines(_PHASES):
            terminalreporter.write_line(line)


def pytest_unconfigure(config):
    shutil.rmtree(os.environ.get("BRINGUP_STATE_DIR", ""), ignore_errors=True)


def pytest_configure(config):
    # the controller of an xdist run names the run, so that at its end it can stop what
    # its workers started (pytest_sessionfinish below); workers get the id from xdist
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None) \
            and getattr(config.option, "testrunuid", "unset") is None:
        import uuid
        config.option.testrunuid = uuid.uuid4().hex


@contextlib.contextmanager
def shared_setup(paths):
    """One worker at a time sets up what all share (lab folders, secrets, PostgreSQL, Redis,
    NetBox's install, configuration and pristine database)."""
    paths.home.mkdir(parents=True, exist_ok=True)
    with open(paths.home / ".tests-setup.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def _started_file(paths, run_id: str) -> Path:
    return paths.run / f"tests-started-{run_id}"


@pytest.fixture(scope="session")
def lab_paths():
    from lab.paths import LabPaths
    paths = LabPaths.default()
    with shared_setup(paths):
        paths.ensure()
    return paths


@pytest.fixture(scope="session")
def postgres(lab_paths):
    """The lab's PostgreSQL and Redis; stopped at the end if this run started them (by the
    session without xdist, else by the xdist controller once every worker is done)."""
    from lab import procs
    from lab.paths import HOST, PG_PORT, REDIS_PORT
    from lab.postgres import Postgres
    from lab.redis import Redis
    pg, redis = Postgres(lab_paths), Redis(lab_paths)
    with shared_setup(lab_paths):
        started = [name for name, port in (("postgres", PG_PORT), ("redis", REDIS_PORT))
                   if not procs.port_open(HOST, port)]
        pg.start()
        redis.start()
        run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
        if started and run_id:
            with open(_started_file(lab_paths, run_id), "a") as f:
                f.write("".join(n + "\n" for n in started))
    yield pg
    if not ports.WORKER:
        _stop_started(lab_paths, started)


def _stop_started(paths, names) -> None:
    from lab.postgres import Postgres
    from lab.redis import Redis
    if "redis" in names:
        Redis(paths).stop()
    if "postgres" in names:
        Postgres(paths).stop()


def pytest_sessionfinish(session):
    config = session.config
    run_id = getattr(config.option, "testrunuid", None)
    if hasattr(config, "workerinput") or not run_id:
        return
    from lab.paths import LabPaths
    paths = LabPaths.default()
    marker = _started_file(paths, run_id)
    if marker.exists():
        _stop_started(paths, set(marker.read_text().split()))
        marker.unlink()


@pytest.fixture(scope="session")
def netbox_install(lab_paths, postgres):
    """The lab's NetBox release, configuration and pristine database, ready to serve any
    database cloned from it: ``netbox_install.start(name=..., port=..., db=...)``."""
    from lab.netbox_server import NetBox as NetBoxServer
    srv = NetBoxServer(lab_paths, postgres)
    with shared_setup(lab_paths):
        srv.ensure_venv()
        srv.write_config()
        srv.ensure_pristine()
    return srv


@pytest.fixture(scope="session")
def netbox_server(netbox_install, postgres):
    """A real NetBox of this worker on its own port, over a clone of the pristine database."""
    from lab.netbox_server import PRISTINE_DB
    postgres.clone(PRISTINE_DB, TEST_NETBOX_DB)
    name = ports.netbox_name("test")
    netbox_install.start(name=name, port=TEST_NETBOX_PORT, db=TEST_NETBOX_DB, redis_db=TEST_REDIS_DB, workers=2)
    yield netbox_install
    netbox_install.stop(name)


@pytest.fixture(scope="session")
def netbox_url(netbox_server):
    return netbox_server.url(TEST_NETBOX_PORT)


@pytest.fixture(scope="session")
def netbox_token(lab_paths):
    return (lab_paths.secrets / "netbox-token").read_text().strip()


@pytest.fixture
def netbox(netbox_server, postgres, netbox_url, netbox_token) -> NetBox:
    """A NetBox adapter on a fresh clone of the pristine database (about 0.2 s)."""
    from lab.netbox_server import PRISTINE_DB
    postgres.clone(PRISTINE_DB, TEST_NETBOX_DB)
    ports.flush_redis()
    return NetBox(connect(netbox_url, netbox_token))


@pytest.fixture(scope="session")
def skus():
    return load_skus()


@pytest.fixture(scope="session")
def lab_fleet(skus):
    return load_fleet(REPO / "lab" / "fleets" / "default.yaml", nic_counts(skus))


@pytest.fixture(scope="session")
def prefect_server(lab_paths, postgres):
    """A Prefect server of this worker on the lab's PostgreSQL (as the lab runs it), on a
    fresh database unless a server of an earlier session still runs."""
    from lab.prefect_server import PrefectServer
    srv = PrefectServer(lab_paths, name=ports.PREFECT_NAME, home=lab_paths.home / ports.PREFECT_NAME,
                        port=TEST_PREFECT_PORT)
    if not srv.healthy():
        postgres.drop(srv.db_name)
    srv.start()
    yield srv
    srv.stop()
