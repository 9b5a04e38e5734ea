"""The committed NetBox schema dump: restored only when its manifest matches the installed
NetBox (version and migration list), otherwise the lab migrates and says why."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from lab import netbox_dump as nd
from lab import netbox_server
from lab.paths import LabPaths

MIGRATIONS = ["auth.0001_initial", "dcim.0001_initial", "dcim.0002_squashed", "dcim.0002_a", "dcim.0002_b"]


def manifest(version="4.7.3", migrations=MIGRATIONS, dump_sha="x") -> nd.Manifest:
    migs = sorted(migrations)
    return nd.Manifest(version, migs, nd.migrations_sha256(migs), dump_sha, "15.18")


# --- the manifest check -----------------------------------------------------------------
def test_a_manifest_matching_version_and_migrations_fits():
    assert nd.mismatch(manifest(), "4.7.3", sorted(MIGRATIONS)) is None


def test_another_netbox_version_falls_back_with_both_versions_named():
    why = nd.mismatch(manifest(version="4.7.2"), "4.7.3", sorted(MIGRATIONS))
    assert why == "the dump is of NetBox 4.7.2, the lab pins 4.7.3"


def test_a_migration_the_venv_ships_but_the_dump_lacks_falls_back_naming_it():
    why = nd.mismatch(manifest(), "4.7.3", sorted([*MIGRATIONS, "taggit.0007_new"]))
    assert why is not None and "lacks 1 migration(s)" in why and "taggit.0007_new" in why


def test_a_migration_in_the_dump_the_venv_does_not_ship_falls_back_naming_it():
    why = nd.mismatch(manifest(), "4.7.3", sorted(m for m in MIGRATIONS if m != "dcim.0002_b"))
    assert why is not None and "has 1 the installed NetBox does not ship (dcim.0002_b)" in why


def test_a_hand_edited_migration_list_is_caught_by_its_sha256():
    m = manifest()
    edited = nd.Manifest(m.netbox_version, [*m.migrations, "x.0001_initial"], m.migrations_sha256,
                         m.dump_sha256, m.postgresql)
    assert "sha256" in nd.mismatch(edited, "4.7.3", edited.migrations)


def test_a_manifest_round_trips_through_json():
    m = manifest()
    assert nd.Manifest.from_json(m.to_json()) == m
    assert m.apps == ["auth", "dcim"]


# --- what the installed NetBox ships --------------------------------------------------------
def site_packages(tmp_path: Path) -> Path:
    sp = tmp_path / "site-packages"
    files = {
        "dcim/migrations/__init__.py": "",
        "dcim/migrations/0001_initial.py": "class Migration: pass\n",
        "dcim/migrations/0002_squashed.py":
            "class Migration:\n    replaces = [('dcim', '0002_a'), ('dcim', '0002_b')]\n",
        "dcim/migrations/README.txt": "not a migration",
        "django/contrib/auth/migrations/0001_initial.py": "",
        "django/contrib/auth/migrations/~0002_backup.py": "",
        "django/contrib/auth/tests/dcim/migrations/0001_initial.py": "",  # a test app: left out
        "otherapp/migrations/0001_initial.py": "",  # not an app the dump has
    }
    for rel, text in files.items():
        (sp / rel).parent.mkdir(parents=True, exist_ok=True)
        (sp / rel).write_text(text)
    return sp


def test_shipped_migrations_are_the_files_plus_what_squashed_ones_replace(tmp_path):
    sp = site_packages(tmp_path)
    assert nd.shipped_migrations(sp, ["auth", "dcim"]) == sorted(MIGRATIONS)


def test_an_app_without_a_migrations_folder_makes_the_dump_unusable(tmp_path):
    with pytest.raises(nd.Unusable, match="app taggit has no migrations folder"):
        nd.shipped_migrations(site_packages(tmp_path), ["auth", "dcim", "taggit"])


# --- plan: restore or migrate, and why ---------------------------------------------------------
def committed(tmp_path: Path, version="4.7.3", migrations=MIGRATIONS) -> Path:
    folder = tmp_path / "netbox-db"
    folder.mkdir()
    data = gzip.compress(b"SELECT 1;\n")
    nd.dump_path("4.7.3", folder).write_bytes(data)
    nd.manifest_path("4.7.3", folder).write_text(manifest(version, migrations, nd.sha256(data)).to_json())
    return folder


def test_plan_restores_a_dump_that_fits(tmp_path):
    folder = committed(tmp_path)
    assert nd.plan("4.7.3", site_packages(tmp_path), folder) == (nd.dump_path("4.7.3", folder), "")


def test_plan_migrates_when_there_is_no_dump_for_the_version(tmp_path):
    dump, why = nd.plan("4.8.0", site_packages(tmp_path), committed(tmp_path))
    assert dump is None and why.startswith("no committed dump for NetBox 4.8.0")


def test_plan_migrates_when_the_manifest_is_of_another_version(tmp_path):
    dump, why = nd.plan("4.7.3", site_packages(tmp_path), committed(tmp_path, version="4.7.2"))
    assert dump is None and "4.7.2" in why


def test_plan_migrates_when_the_migration_lists_differ(tmp_path):
    dump, why = nd.plan("4.7.3", site_packages(tmp_path), committed(tmp_path, migrations=MIGRATIONS[:-1]))
    assert dump is None and "lacks 1 migration(s) the installed NetBox ships (dcim.0002_b)" in why


def test_plan_migrates_when_the_dump_is_not_the_one_the_manifest_describes(tmp_path):
    folder = committed(tmp_path)
    nd.dump_path("4.7.3", folder).write_bytes(gzip.compress(b"SELECT 2;\n"))
    dump, why = nd.plan("4.7.3", site_packages(tmp_path), folder)
    assert dump is None and "sha256" in why


def test_pg_dumps_restrict_lines_are_dropped():
    sql = b"\\restrict abc\nSET x = 1;\nCOPY t FROM stdin;\n1\n\\.\n\\unrestrict abc\n"
    assert nd.strip_restrict(sql) == b"SET x = 1;\nCOPY t FROM stdin;\n1\n\\.\n"


# --- ensure_pristine: restore, or migrate saying why -----------------------------------------
class FakePostgres:
    def __init__(self):
        self.dbs: set[str] = set()
        self.loaded: list[str] = []

    def exists(self, db):
        return db in self.dbs

    def drop(self, db):
        self.dbs.discard(db)

    def create(self, db, template=None):
        self.dbs.add(db)

    def load(self, db, sql):
        self.loaded.append(db)

    def psql(self, sql, db="postgres"):
        old, new = sql.split('"')[1], sql.split('"')[3]  # ALTER DATABASE "old" RENAME TO "new"
        self.dbs.remove(old)
        self.dbs.add(new)
        return ""


def pristine(tmp_path, monkeypatch, *, plan, bootstrap_outputs):
    pg = FakePostgres()
    nb = netbox_server.NetBox(LabPaths(tmp_path / "home"), pg)
    calls: list[str] = []
    outputs = iter(bootstrap_outputs)

    def manage(*args, db="netbox", input_=None):
        calls.append(args[0])
        return next(outputs) if args[0] == "shell" else ""

    monkeypatch.setattr(nb, "manage", manage)
    monkeypatch.setattr(nb, "ensure_static", lambda: calls.append("static"))
    monkeypatch.setattr(nd, "site_packages_of", lambda venv: tmp_path)
    monkeypatch.setattr(nd, "plan", lambda version, sp: plan)
    said: list[str] = []
    assert nb.ensure_pristine(said.append) is True
    assert pg.dbs == {netbox_server.PRISTINE_DB}
    assert nb.paths.secret("netbox-token") == "nbt_k.t"
    return pg, calls, said


def test_a_dump_that_fits_is_restored_and_nothing_is_migrated(tmp_path, monkeypatch):
    dump = tmp_path / "netbox-4.7.3.sql.gz"
    dump.write_bytes(gzip.compress(b"SELECT 1;\n"))
    pg, calls, said = pristine(tmp_path, monkeypatch, plan=(dump, ""), bootstrap_outputs=["TOKEN=nbt_k.t\n"])
    assert pg.loaded == [netbox_server.PRISTINE_DB + "_build"]
    assert "migrate" not in calls and calls.count("shell") == 1
    assert said == ["restoring NetBox 4.7.3's migrated schema from netbox-4.7.3.sql.gz"]


def test_a_dump_that_does_not_fit_is_not_restored_and_the_reason_is_said(tmp_path, monkeypatch):
    why = "the dump is of NetBox 4.7.2, the lab pins 4.7.3"
    pg, calls, said = pristine(tmp_path, monkeypatch, plan=(None, why), bootstrap_outputs=["TOKEN=nbt_k.t\n"])
    assert pg.loaded == [] and calls[0] == "migrate"
    assert said[0] == f"not restoring the NetBox schema dump: {why}"


def test_a_restored_dump_that_leaves_migrations_to_apply_is_migrated_instead(tmp_path, monkeypatch):
    dump = tmp_path / "netbox-4.7.3.sql.gz"
    dump.write_bytes(gzip.compress(b"SELECT 1;\n"))
    _, calls, said = pristine(tmp_path, monkeypatch, plan=(dump, ""),
                              bootstrap_outputs=["UNAPPLIED=1 dcim.0300_new\n", "TOKEN=nbt_k.t\n"])
    assert calls[:3] == ["shell", "migrate", "shell"]  # no user or token was made in the restored one
    assert "dcim.0300_new" in said[1] and "migrating instead" in said[1]
