"""A sandboxed Jinja environment whose templates are metered as they run.

`agent.protocol.template_bounds` says what a render may cost; this module puts the
checks where a template spends. bosun compiles every template itself, so the code it
generates can carry them:

- every `{% for %}` reads its items through the meter (`items|bosun_loop`): the
  deadline is checked as the loop starts and, for a long loop, before every item;
  a loop that writes into a buffer (a macro's body, a `{% set %}` block) joins that
  buffer once it holds many pieces, so its size is known as it grows;
- `a + b + c`, `a ~ b ~ c`, slices, filters and calls check what they make, the
  operators that multiply (`* % **`) check their operands first; printing a list or
  dict checks its printed size first;
- the rendered prompt is collected in chunks against the output cap.

A template that stays inside the bounds renders exactly as it would without them: the
checks read values, never change them (`tests/protocol`: 70 real templates). They cost
a few bytecodes per operation and nothing per string operation on short strings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from jinja2 import Template, nodes, pass_context
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.runtime import LoopContext, Undefined
from jinja2.sandbox import SandboxedEnvironment, SecurityError
from jinja2.utils import Namespace

from agent.protocol import template_bounds as bounds
from agent.protocol import template_checks as checks
from agent.protocol.template_bounds import _CURRENT as _METER
from agent.protocol.template_bounds import (
    SHORT_LOOP,
    SMALL,
    Meter,
    TemplateBoundsError,
    _now,
    active,
    metered,
)
from agent.protocol.template_checks import FREE_FILTERS, bounded_filter

_current = _METER.get
_SCALARS = (str, int, float, type(None), Undefined)
_STR_ONLY = {str}
_BUILTIN_METHOD = type("".join)
_GROWING = frozenset({"append", "extend", "insert", "update", "setdefault", "__setitem__"})
# A statement bosun adds at the end of every loop body: where the loop writes into a
# buffer, the buffer's size is checked there (Jinja allows no node types of one's own).
_GREW = "bosun:buffer-grew"
PIECES = 1024  # pieces a buffer holds before it is joined and measured
# Filters whose result is always a string: printed without a check (it was made by one).
STRING_FILTERS = frozenset(
    """trim string tojson upper lower title capitalize replace join e escape forceescape
    indent center format striptags truncate wordwrap urlencode""".split()  # noqa: SIM905
)


class BoundedCodeGenerator(CodeGenerator):
    """Jinja's code generator, with joins, sums, slices and output going through checks."""

    def buffer(self, frame: Frame) -> None:
        """A buffer (a macro's body, a `{% set %}` block, …), with the count of pieces
        at which its loops next join and measure it."""
        super().buffer(frame)
        mark = self.temporary_identifier()
        self._marks = {**getattr(self, "_marks", {}), frame.buffer: mark}
        self.writeline(f"{mark} = {PIECES}")

    def visit_ExprStmt(self, node: nodes.ExprStmt, frame: Frame) -> None:
        if not (isinstance(node.node, nodes.Const) and node.node.value == _GREW):
            super().visit_ExprStmt(node, frame)
            return
        mark = getattr(self, "_marks", {}).get(frame.buffer)
        if mark is not None:  # the end of a loop's body, writing into a buffer
            buf = frame.buffer
            self.writeline(f"if len({buf}) > {mark}: {mark} = environment.grew({buf}, {mark})")

    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        """`{{ x }}`: a string is printed as it is; anything else goes through the
        environment's `finalize`, which checks what printing it would cost. An
        expression that can only be a string (`a ~ b`, `x|trim`) is printed plainly."""
        if self._plain_output(node, frame, finalize):
            self.write("str(")
            return
        self.write("(_p if type(_p := ")

    def _output_child_post(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        if self._plain_output(node, frame, finalize):
            self.write(")")
            return
        self.write(") is str else str(environment.finalize(_p)))")

    def _plain_output(self, node: nodes.Expr, frame: Frame, finalize: Any) -> bool:
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape or finalize.src is None:
            return True  # Jinja's own output (bosun never autoescapes)
        if isinstance(node, nodes.Concat | nodes.TemplateData):
            return True
        if isinstance(node, nodes.Const):
            return isinstance(node.value, str)
        return isinstance(node, nodes.Filter) and node.name in STRING_FILTERS

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
            super().visit_Concat(node, frame)  # Markup joins: bosun never autoescapes
            return
        self.write("environment.join_values((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    @optimizeconst
    def visit_Add(self, node: nodes.Add, frame: Frame) -> None:
        """`a + b`: plain Python, its result measured inline (a length compared; a large
        result goes through `made`). A longer chain, or one of sums nested in brackets,
        goes through `plus`, which checks the total before adding: otherwise a line of
        `s + s + s + …` would build a gigabyte before anything looked. With a number
        among the operands the sum is not a string or a list: nothing to check."""
        operands: list[nodes.Expr] = []
        left: nodes.Expr = node
        while isinstance(left, nodes.Add):
            operands.append(left.right)
            left = left.left
        operands.append(left)
        operands.reverse()
        if any(isinstance(o, nodes.Const) and type(o.value) in (int, float) for o in operands):
            super().visit_Add(node, frame)
            return
        variable = [o for o in operands if not isinstance(o, nodes.Const)]
        if len(variable) <= 2 and not any(
            isinstance(o, nodes.Add | nodes.Concat) for o in variable
        ):
            self.write("(_c if type(_c := (")
            for i, operand in enumerate(operands):
                self.write(" + " if i else "")
                self.visit(operand, frame)
            self.write(")")
            self.write(f") in environment.numbers or len(_c) < {SMALL} else environment.made(_c))")
            return
        self.write("environment.plus((")
        for operand in operands:
            self.visit(operand, frame)
            self.write(", ")
        self.write("))")


class BoundedTemplate(Template):
    """A template whose render is metered and whose output is capped as it is made."""

    def render(self, *args: Any, **kwargs: Any) -> str:
        values = dict(*args, **kwargs)
        ctx = self.new_context(values)
        tools, messages = values.get("tools"), values.get("messages")
        size = sum(len(v) for v in (tools, messages) if type(v) is list)
        with metered(size) as meter:
            trusted = meter.trusted
            if type(tools) is list:  # printed whole, `tool|tojson`, without weighing
                meter.trusted = frozenset(map(id, tools))
            try:
                return collect(self.root_render_func(ctx), meter)
            except Exception:
                self.environment.handle_exception()
            finally:
                meter.trusted = trusted
        raise AssertionError("unreachable")  # pragma: no cover - handle_exception raises

    def generate(self, *args: Any, **kwargs: Any) -> Iterator[str]:
        yield self.render(*args, **kwargs)


def collect(parts: Iterator[str], meter: Meter) -> str:
    """The rendered parts, read in chunks and measured as they come, then joined."""
    out: list[str] = []
    total = 0
    while chunk := list(islice(parts, PIECES)):
        total += sum(map(len, chunk))
        if total > meter.chars:
            meter.fail(f"a prompt of more than {meter.chars:,} characters")
        meter.count(len(out), "a prompt")
        out += chunk
    return "".join(out)


def concat(parts: Any) -> str:
    """Jinja's `concat` (macro bodies, `{% set %}` blocks, …), size checked first."""
    if type(parts) is not list and type(parts) is not tuple:
        parts = list(parts)
    total = sum(map(len, parts))
    if total >= SMALL:
        meter = _current() or active()
        meter.length(total)
        meter.charge(total)
    return "".join(parts)


# Every `{% for %}` iterates `items|bosun_loop`: the cheapest call the generated code
# can make (Jinja allows no node types of one's own).
LOOP_FILTER = "bosun_loop"


@pass_context  # never folded into a constant while compiling
def _loop_items(context: Any, iterable: Any) -> Any:
    meter = _current() or active()
    if _now() > meter.deadline:
        meter.tick()
    kind = type(iterable)
    if (kind is list or kind is tuple or kind is dict) and len(iterable) <= SHORT_LOOP:
        return iterable
    return bounds.Ticking(iterable, meter)


class BoundedNamespace(Namespace):
    """`namespace()`: what an attribute held is given back to the allowance when it is
    set anew (`{% set ns.out = ns.out ~ piece %}` builds a prompt; Reka's template does)."""

    def __setitem__(self, name: str, value: Any) -> None:
        attrs = self._Namespace__attrs  # type: ignore[attr-defined]
        meter = _current()
        if meter is not None and name in attrs:
            meter.credit(attrs[name])
        attrs[name] = value


class BoundedEnvironment(SandboxedEnvironment):
    """The sandbox, metered (see the module's docstring)."""

    code_generator_class = BoundedCodeGenerator
    template_class = BoundedTemplate
    intercepted_binops = frozenset({"*", "%", "**"})  # `+` has its own (visit_Add)
    numbers = frozenset({int, float, bool})  # sums with nothing to measure
    concat = staticmethod(concat)  # type: ignore[assignment]

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_printed, **options)
        self.filters = {
            name: fn if name in FREE_FILTERS else bounded_filter(name, fn)
            for name, fn in self.filters.items()
        }
        self.filters[LOOP_FILTER] = _loop_items
        self.globals["namespace"] = BoundedNamespace

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        if len(source) > bounds.LIMITS.source:
            raise TemplateBoundsError(
                f"{len(source):,} characters of template source, more than {bounds.LIMITS.source:,}"
            )
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Filter(
                loop.iter, LOOP_FILTER, [], [], None, None, lineno=loop.iter.lineno
            )
            loop.body.append(nodes.ExprStmt(nodes.Const(_GREW), lineno=loop.lineno))
        return tree.set_environment(self)  # type: ignore[return-value]

    # -- hooks the generated code calls ---------------------------------------------------

    def made(self, value: Any) -> Any:
        if type(value) is str and len(value) < SMALL:
            return value
        return (_current() or active()).made(value)

    def grew(self, buffer: list[str], mark: int) -> int:
        """A loop's buffer holds `PIECES` new pieces: join them into one (measured and
        charged once), check the buffer's size, and say when to look again. The pieces
        joined before stay at its head, so no character is copied twice."""
        head = mark - PIECES
        buffer[head:] = [concat(buffer[head:])]
        total = sum(map(len, buffer))
        if total > bounds.LIMITS.chars:
            active().length(total, "a block of output")
        return head + 1 + PIECES

    def join_values(self, values: tuple[Any, ...]) -> str:
        """`a ~ b ~ c`: every part printed, the total checked before it is joined."""
        parts = []
        for value in values:
            if type(value) is not str:
                if not isinstance(value, _SCALARS):
                    active().weigh(value)
                value = str(value)
            parts.append(value)
        return concat(parts)

    def plus(self, values: tuple[Any, ...]) -> Any:
        """`a + b + …`: strings joined once their total is known; anything else added
        left to right, each step checked."""
        if set(map(type, values)) == _STR_ONLY:
            return concat(values)
        meter = _current() or active()
        result = values[0]
        for value in values[1:]:
            checks.binop(meter, "+", result, value)
            result = meter.made(result + value)
        return result

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        meter = _current() or active()
        checks.binop(meter, operator, left, right)
        return meter.made(self.binop_table[operator](left, right))

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        meter = _current() or active()
        if _now() > meter.deadline:
            meter.tick()
        kind = type(obj)
        if kind is _BUILTIN_METHOD:
            owner = obj.__self__
            if isinstance(owner, str):  # a new string, or a list of them
                check = checks.STR_METHODS.get(obj.__name__)
                if check is not None:
                    args = check(meter, owner, args, kwargs) or args
                result = super().call(context, obj, *args, **kwargs)
                if type(result) is str and len(result) < SMALL:
                    return result
                return meter.made(result)
            if obj.__name__ in _GROWING and isinstance(owner, list | dict):
                return self._grow(meter, context, obj, owner, args, kwargs)
        elif kind is LoopContext and args:  # `loop(children)` in a recursive loop
            args = (meter.iterate(args[0]), *args[1:])
        # A macro's body was measured as it was joined; anything else returns what
        # exists already (a dict's value, a list's item) or is bounded by its own check.
        # (The sandbox's own `call`, inline: one frame less on every call.)
        if getattr(obj, "unsafe_callable", False) or getattr(obj, "alters_data", False):
            raise SecurityError(f"{obj!r} is not safely callable")
        return context.call(obj, *args, **kwargs)

    def _grow(
        self,
        meter: Meter,
        context: Any,
        method: Any,
        owner: list[Any] | dict[Any, Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """`list.append(x)`, `dict.update(…)`, …: the container may not pass the item
        cap, and what it now holds is charged (a loop could otherwise keep small
        strings until memory runs out)."""
        size = len(owner)
        meter.trusted = frozenset()  # a list or dict changed: weigh everything from now on
        result = super().call(context, method, *args, **kwargs)
        meter.count(len(owner))
        meter.charge(max(len(owner) - size, 0))
        for value in (*args, *kwargs.values()):
            if isinstance(value, str):
                meter.charge(len(value))
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapper = super().wrap_str_format(value)
        if wrapper is None:
            return None
        fmt: str = value.__self__
        is_map = value.__name__ == "format_map"

        def checked(*args: Any, **kwargs: Any) -> str:
            if is_map and len(args) == 1 and isinstance(args[0], dict):
                checks.str_format(active(), fmt, (), args[0])
            else:
                checks.str_format(active(), fmt, args, kwargs)
            return wrapper(*args, **kwargs)

        return checked


def _printed(value: Any) -> Any:
    """`{{ value }}` of a list or dict: printed with str(), a new string each time, so
    its printed size is checked and charged first."""
    if isinstance(value, _SCALARS):
        return value
    meter = active()
    meter.charge(meter.weigh(value))
    return value


__all__ = ["BoundedEnvironment", "BoundedTemplate", "TemplateBoundsError", "bounded_filter"]
