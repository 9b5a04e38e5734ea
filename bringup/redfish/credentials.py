"""BMC credentials from the file named by ``Settings.bmc_credentials_file``.

The file is YAML: a mapping of BMC address -> ``{username, password}``, with an optional
``default`` entry for every other BMC (the lab writes only ``default``). It should be
mode 0600 (a wider one is refused before it is read); passwords never reach logs
(:class:`Credentials` hides them in its repr). Every problem with it is a
:class:`~bringup.errors.SecretFileError`: the controller's, never a node's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bringup.errors import ConfigError, SecretFileError
from bringup.localfiles import check_secret_file
from bringup.redfish.session import Credentials
from bringup.yamlio import load_file


def load_credentials(path: str | Path) -> Callable[[str], Credentials]:
    """Read the file once; return ``credentials_for(address)`` as :func:`bringup.discovery.crawl.discover` wants."""
    p = check_secret_file(path, "BMC credentials file",
                          missing_hint="check bmc_credentials_file in the controller's settings")
    doc = load_file(p)
    if not isinstance(doc.data, dict):
        raise SecretFileError(f"{p}: expected a mapping of BMC address -> {{username, password}}",
                              hint="see `default: {username: ..., password: ...}` in the lab's secrets/bmc.yaml")
    table: dict[str, Credentials] = {}
    for key, entry in doc.data.items():
        if not isinstance(entry, dict) or not entry.get("username") or entry.get("password") is None:
            raise SecretFileError(f"{doc.where((key,))}: entry {key!r} needs username and password",
                                  hint="fix that entry")
        table[str(key)] = Credentials(str(entry["username"]), str(entry["password"]))

    def credentials_for(address: str) -> Credentials:
        found = table.get(address) or table.get("default")
        if found is None:
            raise ConfigError(f"no BMC credentials for {address} in {p} (and no 'default' entry)",
                              hint="add the address or a default entry")
        return found

    return credentials_for
