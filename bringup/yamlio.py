"""Load YAML keeping line numbers, so validation errors can point at ``file:line``.

PyYAML's composer knows where every node starts; we walk the composed tree once and
record the line of every path (``("nodes", 2, "sku")``) next to the plain Python data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from bringup.errors import ConfigError

PathKey = tuple[str | int, ...]


@dataclass
class LocatedYaml:
    """Plain data plus the 1-based line of each path in the source."""

    data: Any
    source: str
    lines: dict[PathKey, int] = field(default_factory=dict)

    def line_of(self, path: PathKey) -> int | None:
        # the closest ancestor that has a line: a missing field points at its parent
        for cut in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:cut]))
            if line is not None:
                return line
        return None

    def where(self, path: PathKey) -> str:
        line = self.line_of(path)
        return f"{self.source}:{line}" if line else self.source


def _walk(node: yaml.Node, path: PathKey, lines: dict[PathKey, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[path + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, path + (key,), lines)
            lines[path + (key,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, path + (i,), lines)


#: libyaml's parser where PyYAML has it (as every wheel does): the same documents, marks and
#: errors, about 15 times less CPU than the pure-Python one (bringup's data files: 217 ms ->
#: 15 ms a pass); a flow reads its thresholds and manifests at every step
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeLoader):  # type: ignore[misc,valid-type]
    """SafeLoader that refuses duplicate keys instead of silently keeping the last."""

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigError(
                    f"line {key_node.start_mark.line + 1}: key {key!r} appears twice "
                    f"(first on line {seen[key]})",
                    hint="remove or rename one of them",
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def load_text(text: str, source: str = "<string>") -> LocatedYaml:
    try:
        # parsed once: the node tree gives the lines, the same tree the data
        loader = _UniqueKeyLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}{at}: not valid YAML: {problem}", hint="fix the syntax there") from None
    lines: dict[PathKey, int] = {}
    if node is not None:
        _walk(node, (), lines)
    return LocatedYaml(data=data, source=source, lines=lines)


def load_file(path: str | Path) -> LocatedYaml:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {p}: {exc.strerror}", hint="check the path") from None
    return load_text(text, str(p))


def format_path(path: PathKey) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validation_error(exc: ValidationError, doc: LocatedYaml, what: str) -> ConfigError:
    """Turn a pydantic error into one ConfigError listing ``file:line field: problem``."""
    problems = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        problems.append(f"  {doc.where(loc)} {format_path(loc)}: {err['msg']}")
    return ConfigError(f"{what} {doc.source} is invalid:\n" + "\n".join(problems),
                       hint="fix the fields listed above")


def load_model[M: BaseModel](path: str | Path, model: type[M], what: str) -> M:
    """A YAML file read into ``model``: a bad key or value is one ConfigError naming it
    (``file:line field: problem``), as every data file of bringup reports it."""
    doc = load_file(path)
    try:
        return model.model_validate(doc.data or {})
    except ValidationError as exc:
        raise validation_error(exc, doc, what) from None
