"""YAML that remembers line numbers, and a reader that reports problems by line.

Contract errors are only useful with a line to jump to. PyYAML's composer knows every
node's start mark; these constructors keep it on the dicts and lists they build, so the
schema checks in agent/contracts/schema.py can point at the key or item that is wrong.
"""

from __future__ import annotations

import re
from typing import Any

import yaml


class Map(dict[Any, Any]):
    """A mapping, with its own line and the line of each key."""

    line: int = 0
    key_lines: dict[Any, int]


class Seq(list[Any]):
    """A sequence, with its own line and the line of each item."""

    line: int = 0
    item_lines: list[int]


class LineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences remember where they start.

    PyYAML keeps the last of two equal keys without a word; a contract with two
    `mutation:` keys must not pass, so duplicates are recorded too.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicate_keys: list[tuple[int, Any]] = []


def _construct_map(loader: LineLoader, node: yaml.MappingNode) -> Map:
    loader.flatten_mapping(node)
    out = Map()
    out.line, out.key_lines = node.start_mark.line + 1, {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool | type(None)):
            key = str(key)
        if key in out:
            loader.duplicate_keys.append((key_node.start_mark.line + 1, key))
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_seq(loader: LineLoader, node: yaml.SequenceNode) -> Seq:
    out = Seq(loader.construct_object(child, deep=True) for child in node.value)
    out.line, out.item_lines = node.start_mark.line + 1, [c.start_mark.line + 1 for c in node.value]
    return out


LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)
LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_seq)


def load(text: str) -> tuple[Any, list[tuple[int, Any]]]:
    """The document and its duplicate keys; raises yaml.YAMLError like yaml.safe_load."""
    loader = LineLoader(text)
    try:
        return loader.get_single_data(), loader.duplicate_keys
    finally:
        loader.dispose()


def kind(value: Any) -> str:
    """A type name for messages, in YAML's words rather than Python's."""
    if value is None:
        return "nothing"
    names: dict[type, str] = {Map: "mapping", Seq: "list"}
    return names.get(type(value), type(value).__name__)


class Reader:
    """Reads one document's values, turning every deviation into a (line, message)."""

    def __init__(self) -> None:
        self.problems: list[tuple[int | None, str]] = []

    def problem(self, line: int | None, message: str) -> None:
        self.problems.append((line, message))

    def mapping(self, value: Any, line: int, what: str, keys: tuple[str, ...]) -> Map | None:
        if not isinstance(value, Map):
            self.problem(line, f"{what} must be a mapping, not {kind(value)}")
            return None
        for key in value:
            if key not in keys:
                hint = f" (allowed: {', '.join(keys)})"
                self.problem(value.key_lines[key], f"unknown key {key!r} in {what}{hint}")
        return value

    def text(
        self, m: Map, key: str, what: str, pattern: re.Pattern[str] | None = None
    ) -> str | None:
        if key not in m:
            self.problem(m.line, f"{what} is missing {key!r}")
            return None
        value, line = m[key], m.key_lines[key]
        if not isinstance(value, str) or not value.strip():
            self.problem(line, f"{what} {key!r} must be a non-empty string, not {kind(value)}")
            return None
        if pattern and not pattern.fullmatch(value):
            self.problem(line, f"{what} {key!r} is {value!r}; expected {pattern.pattern}")
            return None
        return value

    def sequence(self, m: Map, key: str, what: str) -> list[tuple[Any, int]]:
        if key not in m:
            self.problem(m.line, f"{what} is missing {key!r}")
            return []
        value = m[key]
        if not isinstance(value, Seq) or not value:
            self.problem(m.key_lines[key], f"{key!r} must be a non-empty list")
            return []
        return list(zip(value, value.item_lines, strict=True))
