"""The bench scripts are not a package: a test loads the one it tests by path (a helper
module, not a conftest.py: the unit tests import their top-level conftest by name)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[3] / "bench"


def load(name: str) -> ModuleType:
    """bench/<name>.py as a module, registered under its name (dataclasses look their module
    up there) until :func:`unload`."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def unload(name: str) -> None:
    sys.modules.pop(name, None)
