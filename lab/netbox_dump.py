"""The committed dump of NetBox's migrated schema: restored in seconds instead of migrating.

``migrate`` on an empty database takes 5 to 10 minutes on a small machine, and the lab
needs it once per NetBox version (the *pristine* database every other one is cloned from).
So the migrated schema of the pinned version is kept in the repository:

* ``lab/netbox-db/netbox-<version>.sql.gz``: ``pg_dump --no-owner --no-privileges`` of a
  database that was only migrated (no users, no tokens, no sessions), gzip -9;
* ``lab/netbox-db/netbox-<version>.json``: its manifest: NetBox version, the sorted list of
  migrations ``django_migrations`` recorded and its sha256, the dump's sha256, the
  PostgreSQL that made it.

``plan()`` decides whether the dump fits the installed NetBox: same version, and the
migrations its venv ships are exactly the manifest's: every module of the manifest's
apps' ``migrations`` folders, as Django's loader finds them, plus the migrations each
squashed one ``replaces`` (``migrate`` records both). Otherwise it gives the reason,
and the lab migrates as before.

Rebuild it when the NetBox pin moves: ``scripts/netbox-dump`` (see docs/netbox-dump.md).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from lab.errors import LabError

from .paths import NETBOX_VERSION, REPO_ROOT, LabPaths

DUMP_DIR = REPO_ROOT / "lab" / "netbox-db"
#: tables that hold people or credentials: a dump must have none of their rows
PRIVATE_TABLES = ("users_user", "users_token", "django_session", "social_auth_usersocialauth")
_SKIPPED = {"__pycache__", "migrations", "tests", "test", "static", "templates", "locale"}
#: a migration module as Django's loader finds one: any .py not starting with _ or ~
_MIGRATION = re.compile(r"^[^_~].*\.py$")


def dump_path(version: str = NETBOX_VERSION, folder: Path = DUMP_DIR) -> Path:
    return folder / f"netbox-{version}.sql.gz"


def manifest_path(version: str = NETBOX_VERSION, folder: Path = DUMP_DIR) -> Path:
    return folder / f"netbox-{version}.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def migrations_sha256(migrations: Iterable[str]) -> str:
    return sha256("".join(m + "\n" for m in sorted(migrations)).encode())


@dataclass(frozen=True)
class Manifest:
    netbox_version: str
    migrations: list[str]  # "app_label.migration_name", sorted
    migrations_sha256: str
    dump_sha256: str
    postgresql: str

    @property
    def apps(self) -> list[str]:
        return sorted({m.split(".", 1)[0] for m in self.migrations})

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        d = json.loads(text)
        return cls(netbox_version=d["netbox_version"], migrations=list(d["migrations"]),
                   migrations_sha256=d["migrations_sha256"], dump_sha256=d["dump_sha256"],
                   postgresql=d.get("postgresql", "?"))


class Unusable(Exception):
    """The dump does not fit the installed NetBox; the message says why."""


def _listed(names: list[str], most: int = 3) -> str:
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def mismatch(manifest: Manifest, version: str, shipped: list[str]) -> str | None:
    """Why the dump described by ``manifest`` cannot stand for a migrate of NetBox
    ``version`` whose venv ships the migrations ``shipped``; None when it can."""
    if manifest.netbox_version != version:
        return f"the dump is of NetBox {manifest.netbox_version}, the lab pins {version}"
    if migrations_sha256(manifest.migrations) != manifest.migrations_sha256:
        return "the manifest's migration list does not match its own sha256 (edited by hand?)"
    recorded, ships = set(manifest.migrations), set(shipped)
    if recorded != ships:
        missing, extra = sorted(ships - recorded), sorted(recorded - ships)
        parts = []
        if missing:
            parts.append(f"lacks {len(missing)} migration(s) the installed NetBox ships ({_listed(missing)})")
        if extra:
            parts.append(f"has {len(extra)} the installed NetBox does not ship ({_listed(extra)})")
        return "the dump " + " and ".join(parts)
    return None


def _replaces(source: str) -> list[str]:
    """The ``replaces = [(app, name), ...]`` of a squashed migration's source, else []."""
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == "replaces" for t in targets):
            return [f"{app}.{name}" for app, name in ast.literal_eval(node.value)]
    return []


def migration_dirs(site_packages: Path, apps: Iterable[str]) -> dict[str, Path]:
    """Each app label's ``migrations`` folder in ``site_packages`` (an app's folder is
    named after its label: ``dcim/``, ``django/contrib/auth/``, ``sorl/thumbnail/``);
    test apps are left out. Raises Unusable when one is missing or ambiguous."""
    wanted = set(apps)
    found: dict[str, list[Path]] = {}
    # a walk three folders deep (django/contrib/auth/migrations): the whole tree takes
    # seconds on a busy machine, and no app of NetBox's sits deeper
    for top, dirs, _ in os.walk(site_packages):
        here = Path(top)
        depth = len(here.relative_to(site_packages).parts)
        if "migrations" in dirs and here.name in wanted and depth:
            found.setdefault(here.name, []).append(here / "migrations")
        dirs[:] = [] if depth >= 3 else [d for d in dirs if d not in _SKIPPED and not d.endswith(".dist-info")]
    out = {}
    for app in sorted(wanted):
        dirs = found.get(app, [])
        if len(dirs) != 1:
            where = "no migrations folder" if not dirs else "several migrations folders (" + \
                ", ".join(str(p.relative_to(site_packages)) for p in dirs) + ")"
            raise Unusable(f"app {app} has {where} in {site_packages}")
        out[app] = dirs[0]
    return out


def shipped_migrations(site_packages: Path, apps: Iterable[str]) -> list[str]:
    """What ``migrate`` records in django_migrations for ``apps`` on an empty database,
    read from the migration files (no Django start): each file's name, and for a squashed
    one also the migrations it replaces (Django records both). Sorted."""
    names: set[str] = set()
    for app, folder in migration_dirs(site_packages, apps).items():
        for f in folder.iterdir():
            if _MIGRATION.match(f.name):
                names.add(f"{app}.{f.stem}")
                source = f.read_text(errors="replace")
                if "replaces" in source:  # parse only the squashed ones
                    names.update(_replaces(source))
    return sorted(names)


def site_packages_of(venv: Path) -> Path:
    found = sorted((venv / "lib").glob("python3*/site-packages"))
    if not found:
        raise Unusable(f"no site-packages under {venv}")
    return found[-1]


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def plan(version: str, site_packages: Path, folder: Path = DUMP_DIR) -> tuple[Path | None, str]:
    """(the dump to restore, "") when it fits NetBox ``version`` as installed in
    ``site_packages``; else (None, why not), said in one line."""
    dump, man = dump_path(version, folder), manifest_path(version, folder)
    if not dump.exists() or not man.exists():
        return None, f"no committed dump for NetBox {version} ({_shown(dump)})"
    try:
        manifest = Manifest.from_json(man.read_text())
        if sha256(dump.read_bytes()) != manifest.dump_sha256:
            return None, f"{dump.name} does not match the sha256 in {man.name} (rebuild both: scripts/netbox-dump)"
        why = mismatch(manifest, version, shipped_migrations(site_packages, manifest.apps))
    except Unusable as exc:
        return None, str(exc)
    except (ValueError, KeyError, SyntaxError, OSError) as exc:
        return None, f"cannot read {man.name} or the migrations it lists: {exc}"
    return (None, why) if why else (dump, "")


def strip_restrict(sql: bytes) -> bytes:
    """Drop pg_dump's ``\\restrict``/``\\unrestrict`` lines (PostgreSQL 15.14 and later):
    an older psql refuses them, and the dump is ours, reviewed in the repository."""
    return b"".join(ln for ln in sql.splitlines(keepends=True)
                    if not ln.startswith((b"\\restrict ", b"\\unrestrict ")))


def restore(pg, dump: Path, db: str) -> None:
    """Load ``dump`` into the existing, empty database ``db`` (one transaction)."""
    pg.load(db, gzip.decompress(dump.read_bytes()))


def build(paths: LabPaths, *, db: str | None = None, folder: Path = DUMP_DIR,
          say: Callable[[str], None] = print) -> Manifest:
    """Write the dump and manifest of NetBox ``NETBOX_VERSION``: of ``db`` when given (a
    database that was only migrated), else of a scratch database migrated now."""
    from .netbox_server import NetBox  # netbox_server imports this module
    from .postgres import Postgres
    pg = Postgres(paths)
    nb = NetBox(paths, pg)
    pg.start()
    nb.ensure_venv()
    nb.write_config()
    source = db or "nbdump_scratch_" + NETBOX_VERSION.replace(".", "_")
    if db is None:
        pg.drop(source)
        pg.create(source)
        say(f"migrating NetBox {NETBOX_VERSION} into the scratch database {source} (minutes)")
        nb.manage("migrate", "--no-input", db=source)
    elif not pg.exists(db):
        raise LabError(f"no database {db}", hint="name a database that was only migrated, or leave --db out")
    for table in PRIVATE_TABLES:
        rows = pg.psql(f"SELECT count(*) FROM {table}", db=source)
        if rows != "0":
            raise LabError(f"{source} has {rows} row(s) in {table}: the committed dump must hold no users, tokens "
                           "or sessions", hint="leave --db out to dump a database that was only migrated")
    recorded = sorted(pg.psql("SELECT app || '.' || name FROM django_migrations", db=source).splitlines())
    try:
        shipped = shipped_migrations(site_packages_of(nb.venv), {m.split(".", 1)[0] for m in recorded})
    except Unusable as exc:
        raise LabError(f"cannot read the installed NetBox's migrations: {exc}") from None
    if shipped != recorded:
        raise LabError("what migrate recorded differs from the migration files the venv ships, so the lab "
                       "would never restore this dump: " + (mismatch(
                           Manifest(NETBOX_VERSION, recorded, migrations_sha256(recorded), "", ""),
                           NETBOX_VERSION, shipped) or "?"),
                       hint="see lab/netbox_dump.py shipped_migrations: the way migrations are read needs a look")
    sql = strip_restrict(pg.dump(source))
    data = gzip.compress(sql, compresslevel=9, mtime=0)
    manifest = Manifest(netbox_version=NETBOX_VERSION, migrations=recorded,
                        migrations_sha256=migrations_sha256(recorded), dump_sha256=sha256(data),
                        postgresql=pg.psql("SHOW server_version"))
    folder.mkdir(parents=True, exist_ok=True)
    dump_path(NETBOX_VERSION, folder).write_bytes(data)
    manifest_path(NETBOX_VERSION, folder).write_text(manifest.to_json())
    if db is None:
        pg.drop(source)
    say(f"wrote {dump_path(NETBOX_VERSION, folder)} ({len(data) / 1024:.0f} KiB, {len(recorded)} migrations) "
        f"and {manifest_path(NETBOX_VERSION, folder).name}")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/netbox-dump", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="migrate a scratch database and write the dump and its manifest")
    b.add_argument("--db", help="dump this database instead (it must have been only migrated)")
    sub.add_parser("check", help="say whether the committed dump fits the installed NetBox")
    args = parser.parse_args(argv)
    paths = LabPaths.default()
    try:
        if args.command == "build":
            build(paths, db=args.db)
            return 0
        dump, why = plan(NETBOX_VERSION, site_packages_of(paths.netbox / "venv"))
    except (LabError, Unusable) as exc:
        print(f"netbox-dump: {exc}", file=sys.stderr)
        return 1
    print(f"{dump} fits NetBox {NETBOX_VERSION} as installed" if dump else f"would migrate: {why}")
    return 0 if dump else 1


if __name__ == "__main__":
    sys.exit(main())
