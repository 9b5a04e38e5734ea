"""The lab's NetBox: the real NetBox 4.7 wheel from PyPI in its own Python 3.12 venv.

* installed once per version under ``<home>/netbox-<version>/venv``;
* configured by a ``configuration.py`` under NETBOX_ROOT/conf that reads its secrets from
  files and its database name from the environment, so one configuration serves the
  lab instance and the test instances;
* built once per version into a *pristine* database holding the superuser and API
  token: restored from the committed dump of the migrated schema (lab/netbox_dump.py,
  seconds) when it fits the installed NetBox, else migrated (minutes); every live or test
  database is a ``CREATE DATABASE ... TEMPLATE`` clone of it (about 0.2 s);
* served by gunicorn, with WhiteNoise for the static files a real site's web server
  would serve.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

from lab.errors import LabError

from . import netbox_dump, procs
from .paths import HOST, NETBOX_PORT, NETBOX_VERSION, PG_PORT, REDIS_PORT, LabPaths
from .postgres import SUPERUSER, Postgres

PRISTINE_DB = "nbpristine_" + NETBOX_VERSION.replace(".", "_")
LIVE_DB = "netbox"
ADMIN_USER = "admin"
#: the server and static-file layer, pinned: the lab installs nothing it did not test with
GUNICORN_VERSION = "26.2.0"
WHITENOISE_VERSION = "6.12.0"
#: NetBox pins ``psycopg[c,pool]==3.3.6``: the lab takes the same release as psycopg's own
#: prebuilt wheel (``binary``), the same C implementation, instead of compiling ``psycopg-c``
#: with gcc on every fresh machine (30 of the 61 CPU-s a pip install took, measured)
PSYCOPG_REQUIREMENT = "psycopg[binary,pool]==3.3.6"
#: seconds a starting NetBox has to answer /login/: each gunicorn worker imports Django and
#: NetBox (about 5 CPU-s); on a 2-core machine that is also running a test suite's other
#: servers and burn-ins that took more than 90 s (seen)
START_TIMEOUT_S = 240.0

CONFIGURATION = '''\
"""NetBox configuration written by `bringup lab up`. Secrets are read from files."""
import os
from pathlib import Path

_SECRETS = Path({secrets!r})


def _secret(name):
    return (_SECRETS / name).read_text().strip()


ALLOWED_HOSTS = ["*"]
DATABASE = {{
    "NAME": os.environ.get("BRINGUP_NETBOX_DB", {live_db!r}),
    "USER": {pg_user!r},
    "PASSWORD": _secret("postgres-password"),
    "HOST": {host!r},
    "PORT": {pg_port},
    # persistent connections: a new one per request made PostgreSQL fork a backend and
    # both sides run a SCRAM handshake for every API call (issue #23: the suite is
    # CPU-bound). A test may still drop and re-clone the database under a running server
    # (DROP DATABASE ... WITH (FORCE) ends the sessions): the health check before each
    # request finds the connection dead and opens a new one
    "CONN_MAX_AGE": 300,
    "CONN_HEALTH_CHECKS": True,
}}
_REDIS_DB = int(os.environ.get("BRINGUP_NETBOX_REDIS_DB", "0"))
REDIS = {{
    "tasks": {{"HOST": {host!r}, "PORT": {redis_port}, "DATABASE": _REDIS_DB, "PASSWORD": "", "SSL": False}},
    "caching": {{"HOST": {host!r}, "PORT": {redis_port}, "DATABASE": _REDIS_DB + 1, "PASSWORD": "", "SSL": False}},
}}
SECRET_KEY = _secret("netbox-secret-key")
API_TOKEN_PEPPERS = {{1: _secret("netbox-token-pepper")}}
TIME_ZONE = "UTC"
LOGIN_REQUIRED = True
'''

WSGI = '''\
"""gunicorn entry point: NetBox's WSGI app with WhiteNoise serving /static/.

Loaded once in gunicorn's master (--preload) with NetBox's URL configuration (its REST
routers and GraphQL schema, otherwise built by each worker at its first request): the
workers fork with all of it, so a server starts for one NetBox import, not one a worker.
Nothing here opens a connection: Django opens its database and Redis connections in the
worker that first needs them.

With BRINGUP_LAB_NETBOX_CPU_LOG set to a file, each request appends one line to it: the
CPU its thread spent (until gunicorn closed the answer), the wall time, the database,
the method, path and query (bench/netbox_cpu_log.py sums them by endpoint)."""
import os
import time

from django.urls import get_resolver
from whitenoise import WhiteNoise

from netbox.wsgi import application as _netbox

get_resolver().url_patterns   # noqa: B018  (imports the URL configuration now)

_served = WhiteNoise(_netbox, root=os.path.join(os.environ["NETBOX_ROOT"], "static"), prefix="static/")
_CPU_LOG = os.environ.get("BRINGUP_LAB_NETBOX_CPU_LOG", "")


class _Timed:
    """An answer whose close() (gunicorn's, in the request's thread, after the last
    chunk) logs what the request cost."""

    def __init__(self, body, environ, cpu0, wall0):
        self.body, self.environ, self.cpu0, self.wall0 = body, environ, cpu0, wall0

    def __iter__(self):
        return iter(self.body)

    def close(self):
        try:
            if hasattr(self.body, "close"):
                self.body.close()
        finally:
            e = self.environ
            line = "%.3f %.1f %.1f %s %s %s %s\\n" % (
                self.wall0, (time.thread_time() - self.cpu0) * 1000, (time.time() - self.wall0) * 1000,
                os.environ.get("BRINGUP_NETBOX_DB", "-"), e.get("REQUEST_METHOD", "-"), e.get("PATH_INFO", "-"),
                (e.get("QUERY_STRING") or "-")[:300].replace(" ", "+"))
            # one write of a line under PIPE_BUF with O_APPEND: whole, whichever process wrote it
            fd = os.open(_CPU_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)


def application(environ, start_response):
    if not _CPU_LOG:
        return _served(environ, start_response)
    cpu0, wall0 = time.thread_time(), time.time()
    return _Timed(_served(environ, start_response), environ, cpu0, wall0)
'''

# one Django start: first what `migrate` would still apply (none, after a migrate or the
# restore of a dump that fits), and only when nothing is left, the superuser and token
BOOTSTRAP = '''\
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from users.models import Token, User
_ex = MigrationExecutor(connection)
_plan = _ex.migration_plan(_ex.loader.graph.leaf_nodes())
if _plan:
    print("UNAPPLIED=%d %s" % (len(_plan), ", ".join("%s.%s" % (m.app_label, m.name) for m, _ in _plan[:3])))
else:
    u = User.objects.filter(username={user!r}).first()
    if u is None:
        u = User.objects.create_superuser({user!r}, "admin@lab.invalid", {password!r})
    t = Token(user=u, description="bringup lab", write_enabled=True)
    t.save()
    print("TOKEN=nbt_%s.%s" % (t.key, t.token))
'''


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: a NetBox process starting meanwhile (another
    test worker's server, a gunicorn worker restarting) never reads half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def find_python312() -> str:
    """A Python 3.12 for NetBox's own venv (NetBox 4.7 needs >= 3.12)."""
    candidates = [os.environ.get("BRINGUP_PYTHON312", ""), shutil.which("python3.12") or ""]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")))
    candidates += sorted(glob.glob("/root/.pyenv/versions/3.12*/bin/python3.12"))
    candidates += ["/usr/bin/python3.12", "/usr/local/bin/python3.12"]
    for c in candidates:
        if c and os.path.exists(c):
            r = subprocess.run([c, "-c", "import sys, venv; print(sys.version_info[:2] >= (3, 12))"],
                               capture_output=True, text=True, check=False)
            if r.returncode == 0 and r.stdout.strip() == "True":
                return c
    raise LabError("no Python 3.12 found for NetBox's venv",
                   hint="install Python 3.12 or set BRINGUP_PYTHON312 to its interpreter")


class NetBox:
    def __init__(self, paths: LabPaths, pg: Postgres) -> None:
        self.paths = paths
        self.pg = pg
        self.base = paths.netbox
        self.venv = self.base / "venv"
        self.root = self.base / "root"

    # --- install ----------------------------------------------------------------------
    @property
    def exe(self) -> Path:
        return self.venv / "bin" / "netbox"

    def ensure_venv(self) -> bool:
        marker = self.venv / ".bringup-installed"
        if marker.exists():
            return False
        # uv, the project's installer (the dev group): 9.5 s where pip took 63 s (resolving,
        # unpacking, compiling psycopg-c); --compile-bytecode as pip does, since CI sets
        # PYTHONDONTWRITEBYTECODE and every NetBox process would compile its imports again
        uv = Path(sys.executable).parent / "uv"
        if not uv.exists():
            raise LabError(f"uv is missing beside {sys.executable}: the lab installs NetBox with it",
                           hint="run ./scripts/bootstrap")
        self.base.mkdir(parents=True, exist_ok=True)
        if self.venv.exists():
            shutil.rmtree(self.venv)  # a half-finished install: start over
        subprocess.run([find_python312(), "-m", "venv", "--without-pip", str(self.venv)], check=True)
        override = self.base / "overrides.txt"
        override.write_text(PSYCOPG_REQUIREMENT + "\n")
        r = subprocess.run([str(uv), "pip", "install", "-q", "--python", str(self.venv / "bin" / "python"),
                            "--compile-bytecode", "--override", str(override),
                            f"netbox=={NETBOX_VERSION}", f"gunicorn=={GUNICORN_VERSION}",
                            f"whitenoise=={WHITENOISE_VERSION}"],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise LabError(f"installing netbox=={NETBOX_VERSION} failed:\n{r.stderr[-2000:]}")
        marker.write_text(NETBOX_VERSION + "\n")
        return True

    def write_config(self) -> None:
        self.paths.secret("netbox-secret-key", length=50)
        self.paths.secret("netbox-token-pepper", length=50)
        self.paths.secret("netbox-admin-password", length=18)
        conf = self.root / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        _replace(conf / "configuration.py", CONFIGURATION.format(
            secrets=str(self.paths.secrets), live_db=LIVE_DB, pg_user=SUPERUSER, host=HOST,
            pg_port=PG_PORT, redis_port=REDIS_PORT))
        _replace(self.root / "bringup_wsgi.py", WSGI)

    def overrides(self, db: str = LIVE_DB, redis_db: int = 0) -> dict[str, str]:
        """What a NetBox process needs on top of the caller's environment."""
        return {"NETBOX_ROOT": str(self.root), "BRINGUP_NETBOX_DB": db,
                "BRINGUP_NETBOX_REDIS_DB": str(redis_db), "PYTHONPATH": str(self.root)}

    def env(self, db: str = LIVE_DB, redis_db: int = 0) -> dict[str, str]:
        return {**os.environ, **self.overrides(db, redis_db)}

    def manage(self, *args: str, db: str = LIVE_DB, input_: str | None = None) -> str:
        r = subprocess.run([str(self.exe), *args], env=self.env(db), capture_output=True, text=True,
                           input=input_, check=False)
        if r.returncode != 0:
            raise LabError(f"netbox {' '.join(args)} failed:\n{(r.stdout + r.stderr)[-3000:]}")
        return r.stdout

    # --- pristine database --------------------------------------------------------------
    def ensure_pristine(self, progress=print) -> bool:
        """Build the pristine database once per NetBox version: the committed dump of the
        migrated schema restored when it fits the installed NetBox (seconds), else
        ``migrate`` (minutes), saying why in one line. Returns True when it built it."""
        if self.pg.exists(PRISTINE_DB):
            return False
        build = PRISTINE_DB + "_build"
        self.pg.drop(build)
        self.pg.create(build)
        restored = self._restore(build, progress)
        if not restored:
            progress(f"migrating NetBox {NETBOX_VERSION} into a pristine database (once per version, minutes)")
            self.manage("migrate", "--no-input", db=build)
        out = self._bootstrap(build)
        if restored and out.startswith("UNAPPLIED="):
            progress(f"the restored dump leaves migrations to apply ({out.split('=', 1)[1].strip()}); "
                     "migrating instead (rebuild the dump: scripts/netbox-dump build)")
            self.pg.drop(build)
            self.pg.create(build)
            self.manage("migrate", "--no-input", db=build)
            out = self._bootstrap(build)
        self.ensure_static()  # as before, for callers that only ask for the pristine database
        token = next((ln.split("=", 1)[1] for ln in out.splitlines() if ln.startswith("TOKEN=")), None)
        if not token:
            raise LabError("could not create the NetBox API token", hint=f"output was: {out[-300:]}")
        tok = self.paths.secrets / "netbox-token"
        tok.unlink(missing_ok=True)
        self.paths.secret("netbox-token", factory=lambda: token)
        # the rename is the commit point: a pristine database is complete or absent
        self.pg.psql(f'ALTER DATABASE "{build}" RENAME TO "{PRISTINE_DB}"')
        return True

    def _restore(self, build: str, progress) -> bool:
        """Restore the committed dump into the empty database ``build`` when it fits."""
        try:
            dump, why = netbox_dump.plan(NETBOX_VERSION, netbox_dump.site_packages_of(self.venv))
        except netbox_dump.Unusable as exc:
            dump, why = None, str(exc)
        if dump is None:
            progress(f"not restoring the NetBox schema dump: {why}")
            return False
        progress(f"restoring NetBox {NETBOX_VERSION}'s migrated schema from {dump.name}")
        try:
            netbox_dump.restore(self.pg, dump, build)
        except LabError as exc:
            progress(f"restoring {dump.name} failed ({str(exc).splitlines()[0][:200]}); migrating instead")
            self.pg.drop(build)
            self.pg.create(build)
            return False
        return True

    def _bootstrap(self, db: str) -> str:
        """The superuser and a new API token in ``db``: ``TOKEN=...``, or ``UNAPPLIED=...``
        (and nothing created) when ``migrate`` would still apply something there."""
        return self.manage("shell", "-c", BOOTSTRAP.format(
            user=ADMIN_USER, password=self.paths.secret("netbox-admin-password")), db=db)

    def ensure_static(self) -> bool:
        """Collect NetBox's static files once per version (no database needed). Returns
        True when it collected them; a collect cut short is finished by the next one (it
        copies only what is missing or changed, under a server that may be serving)."""
        marker = self.root / "static" / ".bringup-collected"
        if marker.exists():
            return False
        # any database name will do: collectstatic opens no connection
        self.manage("collectstatic", "--no-input", db=LIVE_DB)
        marker.write_text(NETBOX_VERSION + "\n")
        return True

    def ensure_db(self, db: str = LIVE_DB) -> bool:
        if self.pg.exists(db):
            return False
        self.pg.create(db, PRISTINE_DB)
        return True

    # --- server -------------------------------------------------------------------------
    def url(self, port: int = NETBOX_PORT) -> str:
        return f"http://{HOST}:{port}"

    def start(self, *, name: str = "netbox", port: int = NETBOX_PORT, db: str = LIVE_DB,
              redis_db: int = 0, workers: int = 3) -> None:
        if self.ready(port):
            return
        procs.start(name, [str(self.venv / "bin/gunicorn"), "--bind", f"{HOST}:{port}",
                           "--workers", str(workers), "--threads", "4", "--timeout", "120",
                           "--max-requests", "5000", "--max-requests-jitter", "500", "--preload",
                           *self._control_socket(name),
                           "--chdir", str(self.root), "bringup_wsgi:application"],
                    run_dir=self.paths.run, log_dir=self.paths.logs,
                    env=self.overrides(db, redis_db))
        try:
            procs.wait_until(lambda: self.ready(port), timeout=START_TIMEOUT_S, what=f"NetBox ({name})",
                             log=self.paths.logs / f"{name}.log",
                             alive=lambda: procs.pid_of(self.paths.run, name) is not None)
        except LabError:
            # a server that never answered is not left running (its caller never got a
            # handle to stop it: seen, a gunicorn and its workers still booting after the
            # test session that started them had ended)
            self.stop(name)
            raise

    def _control_socket(self, name: str) -> list[str]:
        """One control socket per server: gunicorn's default is one path per user
        ($HOME/.gunicorn/gunicorn.ctl), which every scenario's NetBox took over in turn. A
        path past the kernel's limit for a unix socket (107 bytes) gets none."""
        path = self.paths.run / f"{name}.ctl"
        return ["--control-socket", str(path)] if len(str(path).encode()) <= 107 else ["--no-control-socket"]

    def ready(self, port: int = NETBOX_PORT) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url(port)}/login/", timeout=3) as resp:
                return resp.status == 200
        except Exception:
            return False

    def api_status(self, token: str, port: int = NETBOX_PORT) -> dict:
        req = urllib.request.Request(f"{self.url(port)}/api/status/",
                                     headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.load(resp)

    def stop(self, name: str = "netbox") -> bool:
        return procs.stop(name, self.paths.run)
