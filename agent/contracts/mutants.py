"""The mutant library: small, named ways to break one function, and source patches.

A falsifier only earns its place if breaking the code it guards makes it fail. The
named mutants cover the common ways a function goes wrong (it passes its input through,
returns nothing, raises); `patch:` mutants cover the rest at source level.

A named mutant replaces the target function's ``__code__`` rather than rebinding the
module attribute: ``from agent.history import retain_assistant_text`` elsewhere keeps a
reference to the same function object, so only changing the object itself reaches every
caller. The replacement code keeps the original parameter list (``inspect.signature``
and tool schemas built from it stay the same) and the same free variables (CPython
refuses a ``__code__`` with a different closure size), and forwards the call to a hook
kept in the function's own globals.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

NAMED_MUTANTS = (
    "identity",
    "return_empty",
    "return_none",
    "return_true",
    "return_false",
    "raise",
    "noop",
)
CONSTANT_PREFIX = "constant:"
TARGET_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")

# Empty values by the name a return annotation starts with; anything richer is found at
# call time from what the original returns.
_EMPTY_BY_NAME: dict[str, Callable[[], Any]] = {
    "str": str,
    "bytes": bytes,
    "bytearray": bytearray,
    "list": list,
    "List": list,
    "Sequence": list,
    "MutableSequence": list,
    "Iterable": list,
    "Collection": list,
    "tuple": tuple,
    "Tuple": tuple,
    "dict": dict,
    "Dict": dict,
    "Mapping": dict,
    "MutableMapping": dict,
    "set": set,
    "Set": set,
    "AbstractSet": set,
    "MutableSet": set,
    "frozenset": frozenset,
    "FrozenSet": frozenset,
    "int": int,
    "float": float,
    "bool": bool,
}
_EMPTYABLE_TYPES = (str, bytes, bytearray, list, tuple, dict, set, frozenset, int, float, bool)
_counter = itertools.count()


class MutantError(ValueError):
    """A mutant that cannot be built or applied; never a reason to call a mutant killed."""


class MutantRaised(RuntimeError):
    """What the `raise` mutant throws: a type no real code path raises or expects."""


@dataclass(frozen=True)
class Mutant:
    """A parsed mutant name; `value` is only meaningful for `constant:VALUE`."""

    spec: str
    kind: str
    value: Any = None


def parse_mutant(spec: str) -> Mutant:
    """Parse a mutant name from a contract; `constant:` takes a YAML/JSON value."""
    if not isinstance(spec, str):
        raise MutantError(f"mutant must be a string, not {type(spec).__name__}")
    if spec in NAMED_MUTANTS:
        return Mutant(spec, spec)
    if spec.startswith(CONSTANT_PREFIX):
        text = spec[len(CONSTANT_PREFIX) :].strip()
        if not text:
            raise MutantError("constant: needs a value, e.g. constant:0 or constant:'text'")
        try:
            return Mutant(spec, "constant", yaml.safe_load(text))
        except yaml.YAMLError as exc:
            raise MutantError(f"constant value {text!r} is not YAML/JSON: {exc}") from None
    known = ", ".join([*NAMED_MUTANTS, "constant:VALUE"])
    raise MutantError(f"unknown mutant {spec!r} (known: {known})")


@dataclass(frozen=True)
class Target:
    """A resolved `module:qualname`; `bound` says a receiver (self/cls) comes first."""

    spec: str
    function: types.FunctionType
    bound: bool


def resolve_target(spec: str) -> Target:
    """Import the module and walk the qualname down to a plain Python function.

    Methods are looked up in the class `__dict__` so staticmethod / classmethod / property
    wrappers are seen for what they are: identity must skip `self` but not a static
    method's first argument.
    """
    if not isinstance(spec, str) or not TARGET_RE.match(spec):
        raise MutantError(f"target {spec!r} is not 'module:qualname'")
    module_name, _, qualname = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise MutantError(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    bound = False
    for part in qualname.split("."):
        raw = obj.__dict__.get(part) if isinstance(obj, type) else None
        if raw is None:
            raw = getattr(obj, part, None)
        if raw is None:
            raise MutantError(f"{module_name} has no {qualname} ({part!r} not found)")
        bound = isinstance(obj, type) and not isinstance(raw, staticmethod | type)
        if isinstance(raw, property):
            raw = raw.fget
        obj = raw.__func__ if isinstance(raw, staticmethod | classmethod) else raw
    while not isinstance(obj, types.FunctionType) and hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__  # functools.wraps / lru_cache: the inner function is called
    if isinstance(obj, types.MethodType):
        obj, bound = obj.__func__, True
    if not isinstance(obj, types.FunctionType):
        raise MutantError(
            f"{spec} is a {type(obj).__name__}, not a Python function; "
            "use a patch: mutant for anything else"
        )
    return Target(spec, obj, bound)


@dataclass(frozen=True)
class _Params:
    positional: tuple[str, ...]
    posonly: int
    kwonly: tuple[str, ...]
    varargs: str | None
    varkw: str | None

    @classmethod
    def of(cls, code: types.CodeType) -> _Params:
        names = code.co_varnames
        n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
        i = n_pos + n_kw
        kwonly = names[n_pos:i]
        varargs = varkw = None
        if code.co_flags & inspect.CO_VARARGS:
            varargs, i = names[i], i + 1
        if code.co_flags & inspect.CO_VARKEYWORDS:
            varkw = names[i]
        return cls(names[:n_pos], code.co_posonlyargcount, kwonly, varargs, varkw)

    def signature(self) -> str:
        parts = list(self.positional)
        if self.posonly:
            parts.insert(self.posonly, "/")
        if self.varargs:
            parts.append("*" + self.varargs)
        elif self.kwonly:
            parts.append("*")
        parts += self.kwonly
        if self.varkw:
            parts.append("**" + self.varkw)
        return ", ".join(parts)

    def forward(self) -> tuple[str, str]:
        args = [*self.positional, *(["*" + self.varargs] if self.varargs else [])]
        kwargs = [f"{k!r}: {k}" for k in self.kwonly]
        if self.varkw:
            kwargs.append("**" + self.varkw)
        return "(" + "".join(a + ", " for a in args) + ")", "{" + ", ".join(kwargs) + "}"


def _empty_from_annotation(function: types.FunctionType) -> Callable[[], Any] | None:
    """An empty value for the declared return type, if the annotation names a simple one."""
    raw = function.__annotations__.get("return")
    if raw is None:
        return None
    ann = raw if isinstance(raw, str) else None
    if ann is None:
        origin = getattr(raw, "__origin__", None) or raw
        ann = str(getattr(origin, "__name__", raw))
    options = [a.strip() for a in ann.split("|") if a.strip() not in ("None", "")]
    if len(options) != 1:
        return None
    head = options[0]
    if head.startswith(("Optional[", "typing.Optional[")):
        head = head.split("[", 1)[1].rstrip("]")
    head = head.split("[", 1)[0].rsplit(".", 1)[-1]
    return _EMPTY_BY_NAME.get(head)


def _behaviour(
    target: Target, mutant: Mutant, original: types.FunctionType, params: _Params
) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """The hook the mutated code calls with the arguments it received."""
    code = target.function.__code__
    is_generator = bool(code.co_flags & inspect.CO_GENERATOR)
    kind = mutant.kind
    if is_generator and kind not in ("identity", "noop", "return_empty", "raise"):
        raise MutantError(f"{kind} makes no sense for generator {target.spec}; use noop or raise")

    if kind == "identity":
        skip = 1 if target.bound else 0
        first = params.positional[skip] if len(params.positional) > skip else None
        if first is None and not params.varargs:
            raise MutantError(f"identity needs an argument, and {target.spec} takes none")

        def identity(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if len(args) > skip:
                return args[skip]
            raise MutantError(f"identity: {target.spec} was called without an argument")

        return identity
    if kind == "raise":

        def raise_(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            raise MutantRaised(f"bosun mutant 'raise' in {target.spec}")

        return raise_
    if kind in ("noop", "return_empty") and is_generator:
        return lambda args, kwargs: ()
    if kind == "return_empty":
        empty = _empty_from_annotation(target.function)
        if empty is not None:
            return lambda args, kwargs: empty()

        def empty_like_result(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            result = original(*args, **kwargs)
            if isinstance(result, _EMPTYABLE_TYPES):
                return type(result)()
            raise MutantError(f"return_empty: no empty {type(result).__name__} for {target.spec}")

        return empty_like_result
    fixed = {"noop": None, "return_none": None, "return_true": True, "return_false": False}
    value = mutant.value if kind == "constant" else fixed[kind]
    return lambda args, kwargs: value


def _mutant_code(function: types.FunctionType, params: _Params, hook_name: str) -> types.CodeType:
    """Code with the original's parameters and free variables that calls the hook.

    The free variables are named inside a dead `if False:` so the compiler keeps them
    (CPython checks the count on assignment) while the body never reads the cells.
    """
    code = function.__code__
    args, kwargs = params.forward()
    call = f"{hook_name}({args}, {kwargs})"
    if code.co_flags & inspect.CO_ASYNC_GENERATOR:
        raise MutantError(f"{function.__qualname__} is an async generator; use a patch: mutant")
    body = f"yield from {call}" if code.co_flags & inspect.CO_GENERATOR else f"return {call}"
    prefix = "async def" if code.co_flags & inspect.CO_COROUTINE else "def"
    freevars = code.co_freevars
    lines = ["def __bosun_factory__():"]
    if freevars:
        lines.append("    " + " = ".join(freevars) + " = None")
    lines.append(f"    {prefix} {code.co_name}({params.signature()}):")
    if freevars:
        lines.append("        if False:")
        lines.append("            " + ", ".join(freevars) + ",")
    lines += [f"        {body}", f"    return {code.co_name}"]
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines), code.co_filename, "exec"), namespace)
    new = namespace["__bosun_factory__"]().__code__
    if new.co_freevars != freevars:  # pragma: no cover - the compiler sorts both the same way
        raise MutantError(f"cannot rebuild the closure of {function.__qualname__}")
    return new.replace(co_qualname=code.co_qualname, co_firstlineno=code.co_firstlineno)


@dataclass
class Applied:
    """A mutant in place; `restore()` puts the original code back (tests use it)."""

    function: types.FunctionType
    original_code: types.CodeType
    hook_name: str

    def restore(self) -> None:
        self.function.__code__ = self.original_code
        self.function.__globals__.pop(self.hook_name, None)


def build(target: Target, mutant: Mutant) -> tuple[types.CodeType, Callable[..., Any], str]:
    """Everything `apply` needs, without changing anything (validation calls this)."""
    function = target.function
    original = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    original.__kwdefaults__ = function.__kwdefaults__
    params = _Params.of(function.__code__)
    hook = _behaviour(target, mutant, original, params)
    hook_name = f"__bosun_mutant_{next(_counter)}__"
    return _mutant_code(function, params, hook_name), hook, hook_name


def apply(target: Target, mutant: Mutant) -> Applied:
    """Swap the mutant into the function object itself, so every binding sees it."""
    code, hook, hook_name = build(target, mutant)
    function = target.function
    applied = Applied(function, function.__code__, hook_name)
    function.__globals__[hook_name] = hook
    function.__code__ = code
    return applied


@dataclass(frozen=True)
class Patch:
    """A source-level mutant: replace the one occurrence of `find` in `file`."""

    file: str
    find: str
    replace: str

    def problem(self, root: Path) -> str | None:
        """Why this patch cannot be applied under `root`, or None when it can."""
        path = root / self.file
        if Path(self.file).is_absolute() or ".." in Path(self.file).parts:
            return f"patch file {self.file!r} must be a path inside the repository"
        if not path.is_file():
            return f"patch file {self.file} does not exist under {root}"
        if self.find == self.replace:
            return "patch replace is the same as find, so the mutant changes nothing"
        count = path.read_text(encoding="utf-8").count(self.find)
        if count != 1:
            return f"patch find text occurs {count} times in {self.file}, not exactly once"
        return None

    def apply(self, root: Path) -> None:
        problem = self.problem(root)
        if problem:
            raise MutantError(problem)
        path = root / self.file
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(self.find, self.replace, 1), encoding="utf-8")
