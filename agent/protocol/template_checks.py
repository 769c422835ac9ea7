"""The checks a template's operations get before they run: operators, methods of str,
filters. Each knows what its operation can make from its operands (a width, a count of
matches, the items of a join) and refuses through the meter
(`agent.protocol.template_bounds`) before the operation allocates; what an operation
makes is measured after it, by `agent.protocol.bounded_jinja` and `bounded_filter`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jinja2.runtime import Undefined

from agent.protocol.template_bounds import _CURRENT, SMALL, Meter, active, weight

_current = _CURRENT.get
_SCALARS = (str, int, float, type(None), Undefined)


# --- operators ------------------------------------------------------------------------


def binop(meter: Meter, op: str, left: Any, right: Any) -> None:
    """Check `left op right` before it runs (the operators the environment intercepts)."""
    bits = 0
    ints = type(left) is int and type(right) is int
    if op == "*":
        _repeat(meter, left, right)
        _repeat(meter, right, left)
        bits = left.bit_length() + right.bit_length() if ints else 0
    elif op == "**":
        bits = right * left.bit_length() if ints and right > 0 and abs(left) > 1 else 0
    elif op == "%" and isinstance(left, str):
        percent(meter, left, right)
    elif op == "+":
        if isinstance(left, str) and isinstance(right, str):
            meter.length(len(left) + len(right))
        elif isinstance(left, list | tuple) and isinstance(right, list | tuple):
            meter.count(len(left) + len(right))
    if bits > meter.limits.int_bits:
        meter.fail(f"a number of more than {meter.limits.int_bits:,} bits")


def _repeat(meter: Meter, seq: Any, times: Any) -> None:
    if type(times) is not int and type(times) is not bool:
        return
    if isinstance(seq, str):
        meter.length(len(seq) * times)
    elif isinstance(seq, list | tuple):
        meter.count(len(seq) * times)


_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_FIELD = re.compile(r"\{[^{}]*\}")


def _number(meter: Meter, digits: str | None) -> None:
    if digits and digits != "*" and (len(digits) > 12 or int(digits) > meter.limits.chars):
        meter.fail(f"a width of more than {meter.limits.chars:,} characters")


def _spread(meter: Meter, fields: int, values: Iterable[Any]) -> None:
    """`fields` places in a format, each printing one of `values`: a value can be named
    again and again (`%(a)s%(a)s…`), so the heaviest one counts for every place."""
    limit = meter.limits.chars
    for value in values:
        if type(value) is int and value > limit:
            meter.fail(f"a width of more than {limit:,} characters")
        if fields * weight(value, limit // max(fields, 1) + 1) > limit:
            meter.fail(f"a formatted string of more than {limit:,} characters")


def percent(meter: Meter, fmt: str, values: Any) -> None:
    """`fmt % values` (and the `format` filter), checked before it runs."""
    fields = 0
    for m in _PERCENT.finditer(fmt):
        fields += 1
        _number(meter, m.group(1))
        _number(meter, m.group(2))
    if isinstance(values, Mapping):
        _spread(meter, fields, values.values())
    else:
        _spread(meter, fields, values if isinstance(values, tuple) else (values,))


def str_format(meter: Meter, fmt: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """`fmt.format(*args, **kwargs)`, checked before it runs."""
    fields = 0
    for m in _FIELD.finditer(fmt):
        fields += 1
        for digits in re.findall(r"\d+", m.group().partition(":")[2]):
            _number(meter, digits)
    _spread(meter, fields, [*args, *kwargs.values()])


# --- methods of str, called from templates -----------------------------------------------

Args = tuple[Any, ...]
Check = Callable[[Meter, Any, Args, dict[str, Any]], Args | None]


def arg(args: Args, kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    """A call's argument, given by position or by name."""
    return args[index] if len(args) > index else kwargs.get(name, default)


def width(meter: Meter, s: Any, args: Args, kwargs: dict[str, Any]) -> None:
    size = arg(args, kwargs, 0, "width", 0)
    if type(size) is int:
        meter.length(size)


def _expandtabs(meter: Meter, s: str, args: Args, kwargs: dict[str, Any]) -> None:
    size = arg(args, kwargs, 0, "tabsize", 8)
    if type(size) is int and size > 0:
        meter.length(len(s) + s.count("\t") * size)


def replace(meter: Meter, s: Any, args: Args, kwargs: dict[str, Any]) -> None:
    if len(args) >= 2 and not kwargs:
        old, new = args[0], args[1]
        count = args[2] if len(args) > 2 else -1
    else:
        old, new = arg(args, kwargs, 0, "old", ""), arg(args, kwargs, 1, "new", "")
        count = arg(args, kwargs, 2, "count", -1)
    if not (isinstance(s, str) and isinstance(old, str) and isinstance(new, str)):
        return
    grow = len(new) - len(old)
    if grow <= 0 or len(s) + (len(s) + 1) * grow <= meter.chars:
        return  # within the cap even if every position matched
    found = s.count(old) if old else len(s) + 1
    if type(count) is int and count >= 0:
        found = min(found, count)
    meter.length(len(s) + found * grow)


def joined(meter: Meter, sep: str, items: Any) -> list[Any]:
    """The items `sep.join` (or `|join`) would print, checked: each big item may be
    there many times."""
    listed = list(meter.iterate(items))
    meter.count(len(listed))
    limit = meter.limits.chars
    total = len(sep) * max(len(listed) - 1, 0)
    for item in listed:
        total += len(item) if isinstance(item, str) else weight(item, limit)
        if total > limit:
            meter.fail(f"a joined string of more than {limit:,} characters")
    return listed


def _join(meter: Meter, sep: str, args: Args, kwargs: dict[str, Any]) -> Args | None:
    return (joined(meter, sep, args[0]),) if len(args) == 1 and not kwargs else None


def _split(meter: Meter, s: str, args: Args, kwargs: dict[str, Any]) -> None:
    sep = arg(args, kwargs, 0, "sep")
    if isinstance(sep, str) and sep:
        pieces = s.count(sep) + 1
    else:
        pieces = (len(s) + 1) // 2 + 1
        if pieces > meter.limits.items:
            pieces = sum(1 for _ in re.finditer(r"\S+", s))
    meter.count(pieces)


def _splitlines(meter: Meter, s: str, args: Args, kwargs: dict[str, Any]) -> None:
    meter.count(sum(s.count(c) for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029") + 1)


def _translate(meter: Meter, s: str, args: Args, kwargs: dict[str, Any]) -> None:
    table = arg(args, kwargs, 0, "table")
    if isinstance(table, Mapping):
        longest = max((len(v) for v in table.values() if isinstance(v, str)), default=1)
        meter.length(len(s) * max(longest, 1))


STR_METHODS: dict[str, Check] = {
    "center": width,
    "ljust": width,
    "rjust": width,
    "zfill": width,
    "expandtabs": _expandtabs,
    "replace": replace,
    "join": _join,
    "split": _split,
    "rsplit": _split,
    "splitlines": _splitlines,
    "translate": _translate,
}


# Filters that print a non-string value (str() of a list or dict): its printed size is
# checked first. Filters that cannot make anything larger than their input are left
# unwrapped (no cost); every other filter's result is checked.
_PRINTING = frozenset(
    """string pprint format e escape forceescape safe upper lower title capitalize trim
    striptags replace center indent wordwrap truncate urlize urlencode xmlattr
    wordcount""".split()  # noqa: SIM905 - a word list
)
FREE_FILTERS = frozenset(
    """abs attr count d default dictsort first float groupby int items last length map
    max min random reject rejectattr round select selectattr sort unique
    filesizeformat""".split()  # noqa: SIM905 - a word list
)
# A filter's check: (meter, value, the other arguments, keywords) -> the value to filter
# instead (a generator it had to read to check), or None.
FilterCheck = Callable[[Meter, Any, tuple[Any, ...], dict[str, Any]], Any]


def _indent(meter: Meter, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    width = arg(args, kw, 0, "width", 4)
    size = len(width) if isinstance(width, str) else width if type(width) is int else 0
    if isinstance(value, str):
        meter.length(len(value) + (value.count("\n") + 1) * max(size, 0))


def _wordwrap(meter: Meter, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    wrapstring = arg(args, kw, 2, "wrapstring") or "\n"
    if isinstance(value, str) and isinstance(wrapstring, str):
        meter.length(len(value) * (1 + len(wrapstring)))


def _counted(name: str) -> FilterCheck:
    def check(meter: Meter, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
        n = arg(args, kw, 0, name, 0)
        if type(n) is int:
            meter.count(n)

    return check


def _list(meter: Meter, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if isinstance(value, str):
        meter.count(len(value))


def _sum(meter: Meter, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> list[Any]:
    listed = list(meter.iterate(value))
    meter.count(len(listed))
    meter.count(sum(len(v) for v in listed if isinstance(v, list | tuple)), "a sum")
    return listed


def _join(meter: Meter, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> list[Any]:
    sep = arg(args, kw, 0, "d", "")
    return joined(meter, sep if isinstance(sep, str) else "", value)


def _format(meter: Meter, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if isinstance(value, str):
        percent(meter, value, kw or args)


def _tojson(meter: Meter, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if id(value) in meter.trusted:
        return
    if not args and not kw:
        meter.length(weight(value, meter.chars), "JSON")
        return
    indent = arg(args, kw, 0, "indent")
    separators = arg(args, kw, 1, "separators")
    step = len(indent) if isinstance(indent, str) else indent if type(indent) is int else 0
    if isinstance(separators, tuple | list):
        step += sum(len(s) for s in separators if isinstance(s, str))
    scale = 6 if arg(args, kw, 3, "ensure_ascii", False) else 1  # "\uXXXX" each
    meter.length(weight(value, meter.chars, max(step, 0)) * scale, "JSON")


FILTER_CHECKS: dict[str, FilterCheck] = {
    "center": width,
    "indent": _indent,
    "wordwrap": _wordwrap,
    "batch": _counted("linecount"),
    "slice": _counted("slices"),
    "list": _list,
    "sum": _sum,
    "join": _join,
    "format": _format,
    "tojson": _tojson,
    "replace": replace,
}


# How much longer than its (string) input a filter's output can be: with a short input
# and no other arguments its result needs no measuring (`e`: "<" is "&lt;").
_GROWTH = {"string": 1, "trim": 1, "striptags": 1, "truncate": 1, "wordcount": 1, "safe": 1}
_GROWTH |= {"upper": 3, "lower": 3, "title": 3, "capitalize": 3, "e": 6, "escape": 6}
_GROWTH |= {"forceescape": 6, "urlencode": 12}


def bounded_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, with its operands checked first (where they can multiply) and its result
    after; a short string through a filter that cannot grow it much costs one test."""
    skip = 1 if getattr(fn, "jinja_pass_arg", None) is not None else 0
    check = FILTER_CHECKS.get(name)
    printing = name in _PRINTING
    short = SMALL // _GROWTH[name] if name in _GROWTH else -1

    def checked(*args: Any, **kwargs: Any) -> Any:
        if len(args) > skip:
            value = args[skip]
            if type(value) is str:
                if len(value) < short and len(args) == skip + 1:
                    return fn(*args, **kwargs)
            elif printing and not isinstance(value, _SCALARS):
                active().weigh(value)  # str() of a list or dict
            if check is not None:
                read = check(_current() or active(), value, args[skip + 1 :], kwargs)
                if read is not None:
                    args = (*args[:skip], read, *args[skip + 1 :])
        result = fn(*args, **kwargs)
        if type(result) is str and len(result) < SMALL:
            return result
        return (_current() or active()).made(result)

    return functools.update_wrapper(checked, fn)


__all__ = [
    "FILTER_CHECKS",
    "FREE_FILTERS",
    "STR_METHODS",
    "arg",
    "binop",
    "bounded_filter",
    "joined",
    "percent",
    "str_format",
]
