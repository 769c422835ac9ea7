"""Untrusted text: JSON decoded from it, JSON lines and terminal text written from it.

Model output, tasks files and servers are hostile until proven otherwise. Python's json
recurses once per nesting level, so an argument nested 5000 deep would end the run with
a RecursionError; a lone surrogate (`"\\ud800"`) decodes to a string that no UTF-8 file
or terminal can take. Everything bosun decodes from such text goes through `loads`
(nesting bounded, surrogates replaced), and every JSON line it writes through
`json_line`, which cannot fail on what it was given; text for a terminal goes through
`visible`. This module imports nothing from bosun, so every layer can use it.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_DEPTH = 64  # deeper than any real tool call, far below Python's recursion limit
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}()]')
_SURROGATE = re.compile("[\ud800-\udfff]")
_SHORT = reprlib.Repr()  # bounded depth (6 levels) and size: repr() of a deep value recurses
_SHORT.maxstring = _SHORT.maxother = 200


class TooDeep(ValueError):
    """The text nests deeper than MAX_DEPTH."""


def check_depth(text: str, limit: int = MAX_DEPTH) -> None:
    """Raise TooDeep when brackets outside JSON strings nest deeper than `limit`; one
    linear pass (parentheses count too, for Python literals)."""
    depth = 0
    for m in _TOKENS.finditer(text):
        c = m.group()[0]
        if c in "[{(":
            depth += 1
            if depth > limit:
                raise TooDeep(f"nested deeper than {limit} levels")
        elif c in "]})":
            depth -= 1


def clean(value: Any) -> Any:
    """`value` with every lone surrogate in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    return value


def loads(text: str, **options: Any) -> Any:
    """json.loads, with nesting bounded (TooDeep, a ValueError) and surrogates cleaned."""
    check_depth(text)
    return clean(json.loads(text, **options))


def json_file(path: Path, read: Callable[[Path], str]) -> Any:
    """A workspace's JSON file (`.mcp.json`, `.claude/settings.json`) through the config
    reader `read` (a regular file, bounded), nesting bounded: None where there is no
    such file, a ValueError naming the file where it is not JSON."""
    if not (path.exists() or path.is_symlink()):
        return None
    text = read(path)
    try:
        return loads(text)
    except ValueError as exc:  # TooDeep is one
        raise ValueError(f"{path} is not valid JSON: {exc}") from None


def raw_decode(decoder: json.JSONDecoder, text: str, index: int) -> tuple[Any, int]:
    """JSONDecoder.raw_decode, bounded and cleaned like `loads` (the caller checks the
    depth of the whole text once; this guards a text it did not check)."""
    try:
        value, end = decoder.raw_decode(text, index)
    except RecursionError:
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels") from None
    return clean(value), end


def json_line(record: Any) -> str:
    """One JSON line for a file or a pipe: non-ASCII kept, lone surrogates replaced, any
    nesting written (the encoder is iterative enough; a value too deep is summarised)."""
    try:
        text = json.dumps(record, ensure_ascii=False)
    except (RecursionError, ValueError):
        text = json.dumps({"unwritable": _SHORT.repr(record)}, ensure_ascii=False)
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    # NEL and the Unicode line separators are valid in JSON strings, but str.splitlines
    # and some JSONL readers break lines at them: escape them like other controls.
    return text.translate(_LINE_BREAKS) if _BREAKS.search(text) else text


_BREAKS = re.compile("[\x85\u2028\u2029]")
_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


# C0 controls but newline and tab, DEL, and C1 controls: what a terminal acts on; and
# the bidirectional overrides and isolates that reorder what is shown ("Trojan Source").
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` for a terminal, every control character shown as an escape (`\\x1b`) so
    that file or model text cannot move the cursor, hide lines of a diff shown for
    approval, or retitle the window. Lone surrogates are replaced too."""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_shown, text)


def _shown(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def fold(text: str, width: int, keep: int = 4) -> str:
    """`text` the user must read before saying yes (a shell command, a hook's, an MCP
    server's command line) in a few rows, escapes shown: runs of blank lines counted,
    not shown; of more than 2 * `keep` + 1 lines the first and the last `keep`; of a
    line wider than `width` its start and its end. Padding, down or across, can push
    neither the start nor the end of a command out of sight above the question. Only
    "\\n" breaks a line, as for a shell: other breaks are shown as escapes. Linear."""
    rows: list[str] = []
    blank = 0
    for line in text.split("\n"):
        if not line.strip():
            blank += 1
            continue
        if blank and rows:
            rows.append(f"⋮ ({blank} blank line{'s' if blank != 1 else ''})")
        blank = 0
        rows.append(line)
    if len(rows) > 2 * keep + 1:
        rows = [*rows[:keep], f"⋮ ({len(rows) - 2 * keep} more lines)", *rows[-keep:]]
    return "\n".join(_ends(visible(row), width) for row in rows)


def one_line(text: str, width: int) -> str:
    """`text` as one row of at most `width` characters, for a name or a pattern that
    ought to be one line (a hook's matcher): every control shown, newline and tab too,
    and of a longer one its start and its end."""
    shown = visible(text).replace("\n", "\\n").replace("\t", "\\t")
    return _ends(shown, width)


def _ends(line: str, width: int) -> str:
    width = max(width, 9)
    if len(line) <= width:
        return line
    head = (width - 1) // 2
    return line[:head] + "…" + line[len(line) - (width - 1 - head) :]
