"""A fresh NetBox database with bringup's schema applied, for a scenario that starts from
day one, in about a second instead of applying the schema again.

Applying the schema through NetBox's API (``bringup netbox apply``: some forty objects,
each read and written) costs 10-20 s of NetBox's CPU on 2 cores, and about ten scenarios
of a run need it. The first to get here applies it to its own clone of the pristine
database and keeps a copy as a template database; every later one, on any xdist worker,
clones that template. The template's name carries NetBox's release and a digest of the
schema, so a changed ``schema.yaml`` or another NetBox release gets a template of its own
(a warm lab home keeps the old ones; they are never cloned again). What is applied is
what `bringup netbox apply` writes: the schema's own tests
(tests/integration/netbox/test_schema_and_seed.py) still apply it through the API.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
from collections.abc import Callable

import ports

from bringup.netbox.adapter import NetBox
from bringup.netbox.schema import Schema, load_schema
from bringup.netbox.schema_apply import apply_schema


def template_name(schema: Schema) -> str:
    from lab.netbox_server import NETBOX_VERSION
    doc = json.dumps(dataclasses.asdict(schema), sort_keys=True, default=str)
    return f"nbschema_{NETBOX_VERSION.replace('.', '_')}_{hashlib.sha256(doc.encode()).hexdigest()[:12]}"


def fresh_with_schema(postgres, db: str, adapter: Callable[[], NetBox]) -> NetBox:
    """Database ``db`` (served by the NetBox ``adapter()`` talks to) replaced by NetBox's
    pristine database with bringup's schema applied; this slot's Redis emptied."""
    from lab.netbox_server import PRISTINE_DB
    from lab.paths import LabPaths
    schema = load_schema()
    template = template_name(schema)
    if postgres.exists(template):
        postgres.clone(template, db)
        ports.flush_redis()
        return adapter()
    postgres.clone(PRISTINE_DB, db)
    ports.flush_redis()
    nb = adapter()
    apply_schema(nb, schema)
    # one worker at a time makes the template; a second finds it made
    with open(LabPaths.default().home / ".tests-schema.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not postgres.exists(template):
            postgres.clone(db, template)   # ends the server's sessions on db: it reconnects
    return nb
