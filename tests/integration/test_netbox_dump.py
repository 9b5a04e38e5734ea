"""The committed dump of NetBox's migrated schema (lab/netbox-db/) fits the installed
NetBox and, restored into a new database of the lab's PostgreSQL, leaves NetBox nothing to
migrate: the pristine database `lab prepare` restores is the one `migrate` would make."""

import os
import subprocess

import pytest

from lab import netbox_dump as nd
from lab.netbox_server import NetBox
from lab.paths import NETBOX_VERSION

pytestmark = pytest.mark.integration


def test_the_committed_dump_restores_to_a_database_netbox_has_nothing_to_migrate_in(lab_paths, postgres):
    srv = NetBox(lab_paths, postgres)
    srv.ensure_venv()
    srv.write_config()
    dump, why = nd.plan(NETBOX_VERSION, nd.site_packages_of(srv.venv))
    assert dump is not None, f"the lab would migrate instead: {why} (rebuild it: scripts/netbox-dump build)"
    manifest = nd.Manifest.from_json(nd.manifest_path(NETBOX_VERSION).read_text())
    db = "nbdump_itest_" + os.environ.get("PYTEST_XDIST_WORKER", "main")
    postgres.drop(db)
    postgres.create(db)
    try:
        nd.restore(postgres, dump, db)
        recorded = sorted(postgres.psql("SELECT app || '.' || name FROM django_migrations", db=db).splitlines())
        assert recorded == manifest.migrations
        for table in nd.PRIVATE_TABLES:  # no people, tokens or sessions were committed
            assert postgres.psql(f"SELECT count(*) FROM {table}", db=db) == "0", table
        r = subprocess.run([str(srv.exe), "migrate", "--check", "--no-input"], env=srv.env(db),
                           capture_output=True, text=True, timeout=300, check=False)
        assert r.returncode == 0, f"NetBox has migrations to apply on the restored dump:\n{r.stdout[-2000:]}"
    finally:
        postgres.drop(db)
