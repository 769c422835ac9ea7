"""What rendering a chat template may cost: time, output, and what it keeps on the way.

A chat template comes with the model file (or from whoever serves the model) and Jinja
is a programming language: loops nest, macros call themselves, a string can double
eighty times. The sandbox keeps a template from reaching outside itself, not from
running for ever or filling memory, and a template that grows with the conversation
may pass every probe and blow up at turn 40. So every render is metered, by checks
`agent.protocol.bounded_jinja` wires into the environment and into the code it compiles:

- time: a deadline, checked as every loop starts, before every item of a long loop
  and at every call (no thread is needed, none is left running: the check raises
  where the template is);
- size: the prompt, and any one string, list or number the template makes, is capped;
  operations that multiply (`*`, `**`, `%` and format widths, `center`, `join` or
  printing one big value many times) are checked from their operands *before* they
  run, so a refusal costs nothing;
- what it keeps: a large string (`SMALL` characters or more) or any list a template
  makes is charged to an allowance, so that many values, each under the cap, cannot
  fill memory either; small strings can pile up only where bosun looks anyway (a
  loop's output is joined and checked as it grows, a list's growth is charged).

A bound, once met, stays met for that meter: the probes bosun renders through a model's
template share one meter, so a template that loops costs the deadline once, not once
per probe. Real templates stay far inside every bound (their prompts are kilobytes to
a few megabytes; tests/data/chat-templates and templates/ render byte-identically).
"""

from __future__ import annotations

import time
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NoReturn

from jinja2.utils import Namespace

from agent.errors import HarnessError, UsageError


class TemplateRenderError(HarnessError):
    """A chat template failed to render: a problem of the template (the model file's, the
    user's input) or of the harness, never of the model's output. A HarnessError, so a
    run that meets it ends with status "error" and the command with one line."""


class TemplateBoundsError(TemplateRenderError, UsageError):
    """A template went past a bound. The model file's template is the user's input, so
    this is a usage error: a one-line refusal (exit 2), or a run's "error" result."""


@dataclass(frozen=True)
class Limits:
    seconds: float = 3.0  # one render, or all the probes of one template, plus:
    per_pair: float = 20e-6  # seconds per pair of messages and tools (see `Meter`)
    chars: int = 8_000_000  # the prompt, and any one string (a 1M-token prompt is ~4M)
    items: int = 1_000_000  # any one list or dict
    allocated: int = 64_000_000  # characters and items made in one render, all told
    int_bits: int = 100_000  # any one integer (about 30,000 digits)
    source: int = 256_000  # characters of template source (real ones are < 20 kB)


LIMITS = Limits()
_now = time.monotonic
_NEVER = float("-inf")
SHORT_LOOP = 256  # items: a loop this short is checked once, as it starts
SMALL = 4096  # characters: a string shorter than this is not charged


class Meter:
    """One render's (or one template's probes') deadline and allowance. Its checks sit
    on the hot path of every render, so they are a comparison or two each."""

    __slots__ = ("chars", "deadline", "exceeded", "items", "left", "limits", "trusted")

    def __init__(self, limits: Limits, size: int = 0) -> None:
        """`size`: the messages and tools the render is given. Real templates can be
        quadratic in them (Gemma 4's and Command R's are: a thousand messages take them
        seconds), so the deadline grows with its square; a template that loops costs
        the probes' three seconds, which have a handful."""
        self.limits = limits
        self.chars, self.items = limits.chars, limits.items
        self.deadline = _now() + limits.seconds + limits.per_pair * size * size
        self.left = limits.allocated
        self.exceeded = ""
        # ids of the render's own inputs that need no weighing (bosun's tool specs,
        # bounded where they are made) until the template changes a list or dict
        self.trusted: frozenset[int] = frozenset()

    def credit(self, value: Any) -> None:
        """`value` was charged and is let go (a namespace attribute set anew): what it
        cost is given back, so building a prompt piece by piece costs its size, not its
        size times the number of pieces."""
        kind = type(value)
        if (kind is str and len(value) >= SMALL) or kind is list or kind is dict:
            self.left = min(self.left + len(value), self.limits.allocated)

    def fail(self, why: str) -> NoReturn:
        """Refuse, and keep refusing: every later check of this meter fails the same way."""
        if not self.exceeded:
            self.exceeded = why
            self.deadline = _NEVER
        raise TemplateBoundsError(self.exceeded)

    def tick(self) -> None:
        if _now() > self.deadline:
            self.fail(self.exceeded or f"rendering took longer than {self.limits.seconds:g} s")

    def charge(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            self.spent()

    def spent(self) -> NoReturn:
        self.fail(f"it made more than {self.limits.allocated:,} characters and items in all")

    def length(self, n: int, what: str = "a string") -> None:
        if n > self.chars:
            self.fail(f"{what} of more than {self.chars:,} characters")

    def count(self, n: int, what: str = "a list") -> None:
        if n > self.items:
            self.fail(f"{what} of more than {self.items:,} items")

    def made(self, value: Any) -> Any:
        """`value`, which the template just made, checked against the caps and charged
        (a large string, any list or dict). Numbers are checked where they can grow:
        `*` and `**`, see `binop`."""
        if isinstance(value, str | bytes):
            n = len(value)
            if n >= SMALL:
                self.length(n)
                self.charge(n)
        elif isinstance(value, list | dict | tuple | set):
            n = len(value)
            self.count(n)
            self.charge(n)
        return value

    def weigh(self, value: Any, indent: int = 0, what: str = "printing a value") -> int:
        """Refuse when `value` printed (str, tojson) would pass the size cap."""
        limit = self.chars
        n = weight(value, limit, indent)
        if n > limit:
            self.fail(f"{what} of more than {limit:,} characters")
        return n

    def iterate(self, iterable: Any) -> Any:
        """A loop's items. The deadline is checked as the loop starts and, for a long
        loop (or one of unknown length), before every item: a short loop's body costs
        no more than a few statements between checks."""
        if _now() > self.deadline:
            self.tick()
        kind = type(iterable)
        if (kind is list or kind is tuple or kind is dict) and len(iterable) <= SHORT_LOOP:
            return iterable
        return Ticking(iterable, self)


class Ticking:
    """A loop's iterable, with the deadline checked before every item. It keeps the
    iterable's length, so `loop.length` and `loop.last` need not read it all first."""

    __slots__ = ("iterable", "meter")

    def __init__(self, iterable: Any, meter: Meter) -> None:
        self.iterable, self.meter = iterable, meter

    def __iter__(self) -> Iterator[Any]:
        meter = self.meter
        for item in self.iterable:
            if _now() > meter.deadline:
                meter.tick()
            yield item

    def __len__(self) -> int:
        return len(self.iterable)


_CURRENT: ContextVar[Meter | None] = ContextVar("bosun_template_meter", default=None)


def active() -> Meter:
    """The meter of the render under way; outside one (Jinja folding constants while it
    compiles), a fresh one, so that the size caps hold there too."""
    return _CURRENT.get() or Meter(LIMITS)


@contextmanager
def metered(size: int = 0) -> Iterator[Meter]:
    """The meter renders inside this block share (the one already running, if any);
    `size`: the messages and tools of the render (see `Meter`)."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    meter = Meter(LIMITS, size)
    token = _CURRENT.set(meter)
    try:
        yield meter
    finally:
        _CURRENT.reset(token)


def weight(value: Any, limit: int, indent: int = 0) -> int:
    """Roughly how many characters `str(value)` or `tojson(value)` takes, counted until
    it passes `limit`: a value that holds one big string a million times is refused
    after a few items, not measured; one that holds itself, or nests past Python's
    recursion limit (json could not print it either), counts as too large. `indent`:
    characters per nesting level. It runs on every `tojson`, so it is kept to a plain
    recursive function (a 20-node tool schema costs about as much as json.dumps)."""
    try:
        return _weigh(value, limit, indent, 0)
    except RecursionError:
        return limit + 1


def _weigh(value: Any, limit: int, indent: int, depth: int) -> int:
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is dict:
        return _weigh_items(value.items(), limit, indent, depth)
    if kind is list or kind is tuple:
        pad = indent * (depth + 1)
        n = 2
        for item in value:
            n += pad + (
                len(item) + 3 if type(item) is str else _weigh(item, limit, indent, depth + 1)
            )
            if n > limit:
                break
        return n
    if kind is int:
        return value.bit_length() // 3 + 1
    if kind is float or kind is bool or value is None:
        return 5
    return _weigh_other(value, limit, indent, depth)


def _weigh_items(items: Iterable[tuple[Any, Any]], limit: int, indent: int, depth: int) -> int:
    pad = indent * (depth + 1)
    n = 2
    for key, item in items:
        n += pad + (len(key) + 4 if type(key) is str else _weigh(key, limit, indent, depth + 1))
        n += len(item) + 2 if type(item) is str else _weigh(item, limit, indent, depth + 1)
        if n > limit:
            break
    return n


def _weigh_other(value: Any, limit: int, indent: int, depth: int) -> int:
    """The weight of a value of a rarer type: a str subclass, another mapping, a set, a
    dict view, jinja2's namespace() (it prints its attributes)."""
    if isinstance(value, str | bytes):
        return len(value) + 2
    if isinstance(value, Mapping):
        return _weigh_items(value.items(), limit, indent, depth)
    if isinstance(value, Namespace):
        return _weigh(value._Namespace__attrs, limit, indent, depth)  # type: ignore[attr-defined]
    if isinstance(value, list | tuple | set | frozenset | KeysView | ValuesView | ItemsView):
        n = 2
        for item in value:
            n += indent * (depth + 1) + _weigh(item, limit, indent, depth + 1)
            if n > limit:
                break
        return n
    return 8


def refused(origin: str, model: str, why: str) -> TemplateBoundsError:
    """The one-line refusal of a template that went past a bound, naming the model."""
    from pathlib import Path

    from agent.untrusted import visible

    where = "" if not model or Path(model).name in origin else f" (model {visible(model)})"
    return TemplateBoundsError(f"chat template {visible(origin)}{where} is refused: {why}")


__all__ = [
    "LIMITS",
    "SHORT_LOOP",
    "SMALL",
    "Limits",
    "Meter",
    "TemplateBoundsError",
    "TemplateRenderError",
    "Ticking",
    "active",
    "metered",
    "refused",
    "weight",
]
