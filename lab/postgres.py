"""The lab's PostgreSQL: Debian's server binaries, a private cluster on a loopback port.

``initdb`` refuses to run as root, so as root every server command runs as the
``postgres`` user (Debian's package creates it) on a data folder that user owns.
The cluster's superuser is ``bringup`` with a generated password kept in secrets/.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
from pathlib import Path

from lab.errors import LabError

from . import procs
from .paths import HOST, PG_PORT, LabPaths

SUPERUSER = "bringup"


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    exe = shutil.which("postgres")
    if exe:
        return Path(exe).resolve().parent
    raise LabError("PostgreSQL server binaries not found",
                   hint="apt-get install postgresql (the lab's `make deps` does it)")


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise LabError("running as root but there is no 'postgres' user",
                       hint="apt-get install postgresql creates it") from None
    return "postgres"


def _as_user(argv: list[str], user: str | None) -> list[str]:
    return ["runuser", "-u", user, "--", *argv] if user else argv


class Postgres:
    def __init__(self, paths: LabPaths) -> None:
        self.paths = paths
        self.data = paths.pg / "data"
        self.sock = paths.pg / "run"
        self.user = _run_as()

    @property
    def password(self) -> str:
        return self.paths.secret("postgres-password")

    def env(self) -> dict[str, str]:
        return {**os.environ, "PGHOST": HOST, "PGPORT": str(PG_PORT), "PGUSER": SUPERUSER,
                "PGPASSWORD": self.password, "PGDATABASE": "postgres"}

    def ensure_cluster(self) -> bool:
        """initdb once. Returns True when it created the cluster."""
        if (self.data / "PG_VERSION").exists():
            return False
        self.paths.ensure()
        self.paths.pg.mkdir(exist_ok=True)
        self.sock.mkdir(exist_ok=True)
        pwfile = self.paths.pg / ".pwfile"
        pwfile.write_text(self.password + "\n")
        if self.user:
            uid = pwd.getpwnam(self.user).pw_uid
            for p in (self.paths.pg, self.sock, pwfile):
                os.chown(p, uid, -1)
        os.chmod(pwfile, 0o600)
        try:
            subprocess.run(_as_user([str(_bindir() / "initdb"), "-D", str(self.data), "-U", SUPERUSER,
                                     "--auth-local=trust", "--auth-host=scram-sha-256",
                                     f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C.UTF-8"], self.user),
                           check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as exc:
            raise LabError(f"initdb failed: {exc.stderr.strip()[-500:]}") from None
        finally:
            pwfile.unlink(missing_ok=True)
        with open(self.data / "postgresql.conf", "a") as f:
            # fsync off: a lab database is disposable and test clones must be fast
            f.write(f"\nlisten_addresses = '{HOST}'\nport = {PG_PORT}\n"
                    f"unix_socket_directories = '{self.sock}'\nfsync = off\nsynchronous_commit = off\n"
                    "full_page_writes = off\nmax_connections = 200\n")
        return True

    def start(self) -> None:
        self.ensure_cluster()
        if procs.port_open(HOST, PG_PORT):
            if not (self.data / "postmaster.pid").exists():
                # another lab home's server (or a foreign one) holds the port: our
                # password would be refused, so say so instead of failing later
                raise LabError(f"port {PG_PORT} is taken by a PostgreSQL that is not this lab's ({self.data})",
                               hint="stop the other lab (`BRINGUP_LAB_HOME=... bringup lab down`) or the process "
                                    f"listening on {HOST}:{PG_PORT}")
            return
        log = self.paths.logs / "postgres.log"
        # the port on the command line too: a lab home initialised before the port moved keeps
        # its old one in postgresql.conf
        procs.start("postgres", [str(_bindir() / "postgres"), "-D", str(self.data), "-p", str(PG_PORT)],
                    run_dir=self.paths.run, log_dir=self.paths.logs, user=self.user)
        procs.wait_until(lambda: self._ready(), timeout=60, what="PostgreSQL", log=log)

    def _ready(self) -> bool:
        r = subprocess.run(["pg_isready", "-q", "-h", HOST, "-p", str(PG_PORT)], capture_output=True, check=False)
        return r.returncode == 0

    def stop(self) -> bool:
        return procs.stop("postgres", self.paths.run, timeout=30)

    def psql(self, sql: str, db: str = "postgres") -> str:
        r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                           env=self.env(), capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise LabError(f"psql failed: {r.stderr.strip()}")
        return r.stdout.strip()

    def dump(self, db: str) -> bytes:
        """``db`` as plain SQL without owners or grants, so it loads into any cluster."""
        r = subprocess.run(["pg_dump", "--no-owner", "--no-privileges", "-d", db], env=self.env(),
                           capture_output=True, check=False)
        if r.returncode != 0:
            raise LabError(f"pg_dump {db} failed: {r.stderr.decode(errors='replace').strip()[-500:]}")
        return r.stdout

    def load(self, db: str, sql: bytes) -> None:
        """Run a plain-SQL dump in ``db``, all of it in one transaction or none of it."""
        r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-d", db],
                           input=sql, env=self.env(), capture_output=True, check=False)
        if r.returncode != 0:
            raise LabError(f"loading SQL into {db} failed: {r.stderr.decode(errors='replace').strip()[-500:]}")

    def exists(self, db: str) -> bool:
        return self.psql(f"SELECT 1 FROM pg_database WHERE datname = '{db}'") == "1"

    def create(self, db: str, template: str | None = None) -> None:
        tmpl = f' TEMPLATE "{template}"' if template else ""
        self.psql(f'CREATE DATABASE "{db}"{tmpl}')

    def drop(self, db: str) -> None:
        # WITH (FORCE) ends sessions still connected (a NetBox server's persistent ones)
        self.psql(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')

    def end_sessions(self, db: str) -> None:
        """End every session on ``db`` (a NetBox server keeps its connections; the next
        request's health check opens new ones)."""
        self.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                  f"WHERE datname = '{db}' AND pid <> pg_backend_pid()")

    def clone(self, template: str, db: str) -> None:
        """A fresh copy of ``template``: about 0.2 s, which is why tests never migrate.
        A template must have no sessions (PostgreSQL refuses to copy a database in use):
        those of a server running on it (a scenario's day-one snapshot of its live
        database) are ended first."""
        self.drop(db)
        self.end_sessions(template)
        self.create(db, template)
