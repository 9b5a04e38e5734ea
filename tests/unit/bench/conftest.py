"""The bench scripts are not a package: a test loads the one it tests by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def load_bench():
    """``load_bench(name)``: bench/<name>.py as a module (registered under its name while
    the test module runs: dataclasses look their module up there)."""
    loaded: list[str] = []

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loaded.append(name)
        spec.loader.exec_module(module)
        return module

    yield load
    for name in loaded:
        sys.modules.pop(name, None)
