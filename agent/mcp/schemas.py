"""What an MCP server's schema may hold beyond being valid JSON Schema.

Validity is not enough: a valid schema can still make checking a call's arguments
recurse without end (a `$ref` that comes back to where it started before stepping into
the arguments: `{"$ref": "#"}`, or two definitions naming each other), run for hours
(a pattern a linear-time engine cannot match), or fetch from the network (a nested `$id`
turns a local `#/…` reference into a remote one). This module walks a schema the way a
validator applies it, iteratively, and says in one line what it would trip on.

A `$ref` that steps into the arguments first (a tree: `"children": {"items": {"$ref":
"#"}}`) is legitimate: the arguments' own depth bounds it, so it is kept.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from agent.tools.validation import pattern_problem, unbounded_keywords

MAX_REF_CHAIN = 16  # $refs followed in a row without stepping into the arguments

# Keywords whose schemas apply to the same value (following them does not descend).
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)
# Keywords whose schemas apply to a part of the value (a property, an item, a key).
_DESCEND_ONE = (
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
)
_DESCEND_MANY = ("prefixItems",)
_DESCEND_MAP = ("properties", "patternProperties")
# Schemas that apply only where a $ref names them; walked for what they hold.
_STORED = ("$defs", "definitions")


def _children(node: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The subschemas `node` applies: (to the same value, to parts of it or stored)."""
    here: list[Any] = [node[k] for k in _IN_PLACE_ONE if k in node]
    for key in _IN_PLACE_MANY:
        if isinstance(node.get(key), list):
            here += node[key]
    for key in _IN_PLACE_MAP:
        if isinstance(node.get(key), dict):
            here += node[key].values()
    down: list[Any] = [node[k] for k in _DESCEND_ONE if k in node and not isinstance(node[k], list)]
    if isinstance(node.get("items"), list):  # a draft-07 tuple
        down += node["items"]
    for key in _DESCEND_MANY:
        if isinstance(node.get(key), list):
            down += node[key]
    for key in (*_DESCEND_MAP, *_STORED):
        if isinstance(node.get(key), dict):
            down += node[key].values()
    return here, down


def _pointer(root: Any, fragment: str) -> Any:
    """The value a JSON pointer fragment names in `root`, or None."""
    node = root
    for raw in fragment.split("/")[1:]:
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


class _Walk:
    """Every schema `root` applies, reached through keywords and $refs, visited once."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.nodes: dict[int, dict[str, Any]] = {}
        self.in_place: dict[int, list[tuple[int, int]]] = {}  # id -> (target, is-a-ref)
        self.anchors: dict[str, list[dict[str, Any]]] = {}
        self.problem: str | None = None

    def run(self) -> str | None:
        self._collect_anchors()
        stack: list[Any] = [self.root]
        while stack and self.problem is None:
            node = stack.pop()
            if not isinstance(node, dict) or id(node) in self.nodes:
                continue
            self.nodes[id(node)] = node
            self.problem = self._own_problem(node)
            if self.problem is not None:
                break
            here, down = _children(node)
            edges = [(id(c), 0) for c in here if isinstance(c, dict)]
            for key in ("$ref", "$dynamicRef"):
                if isinstance(node.get(key), str):
                    targets = self._targets(node[key], dynamic=key == "$dynamicRef")
                    if targets is None:
                        self.problem = f"the $ref {node[key]!r} does not resolve within it"
                        break
                    edges += [(id(t), 1) for t in targets if isinstance(t, dict)]
                    here += targets
            self.in_place[id(node)] = edges
            stack += here + down
        return self.problem or self._loops()

    def _collect_anchors(self) -> None:
        stack: list[Any] = [self.root]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                for key in ("$anchor", "$dynamicAnchor"):
                    if isinstance(item.get(key), str):
                        self.anchors.setdefault(item[key], []).append(item)
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)

    def _targets(self, ref: str, *, dynamic: bool) -> list[Any] | None:
        if not ref.startswith("#"):
            return None
        fragment = ref[1:]
        if fragment == "" or fragment.startswith("/"):
            target = _pointer(self.root, fragment)
            return None if target is None else [target]
        found = self.anchors.get(unquote(fragment))
        # A dynamic reference may land on any schema with that anchor.
        return (found if dynamic else found[:1]) if found else None

    def _own_problem(self, node: dict[str, Any]) -> str | None:
        if node is not self.root:
            for key in ("$id", "$schema"):
                if isinstance(node.get(key), str):
                    return f"a subschema sets {key}, which would make $refs remote"
        patterns = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        if isinstance(node.get("patternProperties"), dict):
            patterns += list(node["patternProperties"])
        for pattern in patterns:
            why = pattern_problem(pattern)
            if why is not None:
                return f"the pattern {why}"
        return None

    def _loops(self) -> str | None:
        """A cycle of in-place steps (one that never descends into the value), or a
        chain of more than MAX_REF_CHAIN $refs in a row: iterative DFS, longest path."""
        longest: dict[int, int] = {}
        on_path: set[int] = set()
        for start in self.in_place:
            if start in longest:
                continue
            stack: list[tuple[int, int]] = [(start, 0)]
            on_path.add(start)
            while stack:
                node, i = stack[-1]
                edges = self.in_place.get(node, [])
                if i < len(edges):
                    stack[-1] = (node, i + 1)
                    target = edges[i][0]
                    if target in on_path:
                        return "the $refs loop back to where they started"
                    if target not in longest:
                        on_path.add(target)
                        stack.append((target, 0))
                    continue
                longest[node] = max((longest[t] + w for t, w in edges), default=0)
                if longest[node] > MAX_REF_CHAIN:
                    return f"more than {MAX_REF_CHAIN} $refs are followed in a row"
                on_path.discard(node)
                stack.pop()
        return None


def reference_problem(schema: dict[str, Any]) -> str | None:
    """Why checking arguments against `schema` would recurse without end, fetch, or
    match a pattern without a time bound; None when it is safe to apply."""
    return _Walk(schema).run() or unbounded_keywords(schema)


def has_pattern(schema: dict[str, Any]) -> bool:
    """Does `schema` apply any regex (`pattern`, `patternProperties`)?"""
    walk = _Walk(schema)
    walk.run()
    return any(
        isinstance(node.get("pattern"), str) or isinstance(node.get("patternProperties"), dict)
        for node in walk.nodes.values()
    )
