"""The agent is copied to nodes alone: Python 3.10 grammar, stdlib + pynvml imports only."""

import ast
import sys
from pathlib import Path

import pytest

AGENT = Path(__file__).resolve().parents[3] / "burnin"
FILES = sorted(AGENT.rglob("*.py"))
# stdlib modules added after 3.10 that must not be used
NEWER_THAN_310 = {"tomllib", "wsgiref.types"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(AGENT)))
def test_agent_module_is_python310_and_stdlib_only(path):
    tree = ast.parse(path.read_text(), feature_version=(3, 10))  # rejects except*, PEP 695 etc.
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside the agent
                continue
            names = [node.module or ""]
            if node.module == "typing":
                assert not {a.name for a in node.names} & {"Self", "Never", "LiteralString", "assert_never"}, path
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert name not in NEWER_THAN_310, f"{path}: {name} needs Python 3.11+"
            assert top in sys.stdlib_module_names or top == "pynvml", f"{path} imports {name}"
    src = path.read_text()
    assert "ExceptionGroup" not in src and "datetime.UTC" not in src
