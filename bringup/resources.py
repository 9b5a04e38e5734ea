"""The one locator of bringup's data files: NetBox schema (``netbox/``), image manifests
(``images/``), playbooks (``playbooks/``), the thresholds, the burn-in agent and the
Prefect project file.

In a checkout they are the repository's own folders. In an installed wheel they ship
inside the package, under ``bringup/_data/`` (see ``force-include`` in pyproject.toml),
so ``pip install bringup`` gives a working ``bringup`` with no checkout around it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from bringup.errors import ConfigError

PACKAGE = Path(__file__).resolve().parent
#: where the wheel puts the top-level data folders
SHIPPED = PACKAGE / "_data"
#: the checkout, when running from one
CHECKOUT = PACKAGE.parent

DATA_DIRS = ("netbox", "images", "playbooks")


def data_dir(name: str) -> Path:
    """``netbox``, ``images`` or ``playbooks``: the shipped copy, else the checkout's."""
    if name not in DATA_DIRS:
        raise ValueError(f"unknown data folder {name!r}; known: {', '.join(DATA_DIRS)}")
    for base in (SHIPPED, CHECKOUT):
        path = base / name
        if path.is_dir():
            return path
    raise ConfigError(f"bringup's {name}/ folder is missing (looked in {SHIPPED} and {CHECKOUT})",
                      hint="reinstall bringup; the wheel ships it under bringup/_data")


def data_file(name: str) -> Path:
    """A data file kept inside the package itself (``thresholds.yaml``)."""
    path = PACKAGE / "data" / name
    if not path.is_file():
        raise ConfigError(f"bringup's data file {name} is missing ({path})", hint="reinstall bringup")
    return path


def project_file() -> Path:
    """``prefect.yaml``: the deployments of the flows."""
    for path in (SHIPPED / "prefect.yaml", CHECKOUT / "prefect.yaml"):
        if path.is_file():
            return path
    raise ConfigError("prefect.yaml is missing", hint="reinstall bringup")


def package_root(package: str) -> Path:
    """The folder a top-level package (``burnin``, ``flows``) is imported from, without
    importing it (the agent must not be imported into the controller)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        raise ConfigError(f"the {package} package is not installed next to bringup", hint="reinstall bringup")
    return Path(spec.origin).resolve().parent


def agent_dir() -> Path:
    """The burn-in agent package that is copied to nodes: installed next to ``bringup``
    (the checkout, or site-packages). Not looked up by import name: a Prefect worker runs
    a flow with ``flows/`` on ``sys.path``, so no module there may be named like a top-level
    package (the burn-in flow is ``flows/burnin_flow.py`` for that reason)."""
    path = CHECKOUT / "burnin"
    if (path / "__main__.py").is_file() and (path / "__init__.py").is_file():
        return path
    raise ConfigError(f"the burn-in agent package is missing next to bringup ({path})", hint="reinstall bringup")
