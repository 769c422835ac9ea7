"""A call's arguments checked against its tool's JSON Schema, in bounded time and stack.

An MCP server's schema is untrusted input, and jsonschema trusts it: it matches
`pattern` and `patternProperties` with Python's `re`, a backtracking engine
(`^(a|a)*$` against forty a's and a "!" runs for hours, and nothing times it out), it
follows a `$ref` that loops until Python's stack runs out, and it fetches a `$ref` it
cannot resolve locally over the network. So here those keywords match with RE2, whose
time is linear in the text (and closer to JSON Schema's ECMA-262 regexes than `re`:
`\\d` is ASCII, `$` is the end of the text); references resolve in the schema alone;
and whatever still goes wrong is an error for the model, never an exception. The MCP
client leaves out, when it takes a listing in, the tools these limits would refuse on
every call (`agent.mcp.tools`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import jsonschema
from jsonschema import ValidationError
from jsonschema.protocols import Validator


class PatternError(ValueError):
    """A pattern RE2 cannot compile: look-arounds, back-references, too large a program."""


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    import re2  # google-re2: lazily, most sessions never match a schema pattern

    options = re2.Options()
    options.log_errors = False  # RE2 logs to the process's stderr, the user's terminal
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        return PatternError(f"{pattern!r} cannot be matched in linear time: {detail}")


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be matched here (RE2 cannot compile it), or None."""
    compiled = _compiled(pattern)
    return str(compiled) if isinstance(compiled, PatternError) else None


def search(pattern: str, text: str) -> bool:
    """re.search's answer, from RE2 (raises PatternError where RE2 has no answer)."""
    compiled = _compiled(pattern)
    if isinstance(compiled, PatternError):
        raise compiled
    try:
        return compiled.search(text) is not None
    except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8
        return compiled.search(text.encode("utf-8", "replace").decode()) is not None


# -- the keywords jsonschema matches with `re`, matched with RE2 ---------------------
# (the logic of jsonschema._keywords' own, with `search` for `re.search`)


def _pattern(validator: Validator, patrn: str, instance: Any, _schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(
    validator: Validator, patterns: dict[str, Any], instance: Any, _schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Validator, additional: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in properties and not any(search(p, key) for p in patterns)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        listed = ", ".join(repr(each) for each in sorted(extras, key=str))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            regexes = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{listed} {verb} not match any of the regexes: {regexes}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({listed} {verb} unexpected)"
            )


_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def _bounded(cls: type[Validator]) -> type[Validator]:
    return jsonschema.validators.extend(cls, _KEYWORDS)  # type: ignore[no-any-return]


def uses(schema: Any, keyword: str) -> bool:
    """Does `keyword` appear as a key anywhere in `schema` (iteratively: any depth)?"""
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if keyword in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def unbounded_keywords(schema: Any) -> str | None:
    """Why jsonschema itself would match with `re` here, or None: `unevaluatedProperties`
    looks for the keys `patternProperties` matched with its own `re.search`."""
    if uses(schema, "unevaluatedProperties") and uses(schema, "patternProperties"):
        return "unevaluatedProperties is used with patternProperties"
    return None


def argument_problem(arguments: Any, schema: dict[str, Any]) -> str | None:
    """What is wrong with `arguments` under `schema`, in one line, or None when they fit.
    Never raises for anything in the schema or the arguments."""
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    unbounded = unbounded_keywords(schema)
    if unbounded is not None:
        return f"its schema cannot be checked in bounded time: {unbounded}"
    cls = _bounded(jsonschema.validators.validator_for(schema, default=_default()))
    try:
        cls.check_schema(schema)
        # An empty registry: a $ref resolves in this schema alone, nothing is fetched.
        validator = cls(schema, registry=Registry())  # type: ignore[call-arg]
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.SchemaError as exc:
        return f"its schema is not valid JSON Schema: {exc.message}"
    except PatternError as exc:
        return f"its schema has a pattern that cannot be checked: {exc}"
    except Unresolvable as exc:
        return f"its schema has a $ref that does not resolve within it: {exc}"
    except RecursionError:
        return "its schema's $refs recurse deeper than the arguments can be checked"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return error.message + (f" (at {where})" if where else "")


def _default() -> type[Validator]:
    return jsonschema.Draft202012Validator  # type: ignore[return-value]
