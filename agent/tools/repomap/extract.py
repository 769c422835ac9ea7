"""One file's symbols: its definitions (name, kind, line, the line's text) and the names
it refers to, from tree-sitter.

tree-sitter parses without recursion in Python and its queries run in C, so a file of a
million nested brackets costs time, not stack; both the parse and the queries still run
under a time limit, and a file that hits it is mapped with what was found (or nothing).
The grammars come from tree-sitter-language-pack 0.9, which bundles them: nothing is
downloaded, ever (its 1.x releases fetch grammars on first use).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from agent.tools.repomap.languages import KIND_ORDER, LANGUAGES

PARSE_TIMEOUT_US = 3_000_000  # a parse that takes longer gives up
QUERY_TIMEOUT_US = 2_000_000
MAX_SIGNATURE_CHARS = 120
MAX_REFERENCE_NAMES = 4_000  # distinct names kept per file (the most used)
MAX_DEFINITIONS = 2_000  # per file


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str
    line: int  # 1-based
    signature: str  # the definition's first line, stripped and cut


@dataclass
class Symbols:
    definitions: list[Definition] = field(default_factory=list)
    references: dict[str, int] = field(default_factory=dict)  # name -> uses
    note: str = ""  # why the file was mapped only in part ("" when whole)


@cache
def _parser_and_queries(lang: str) -> tuple[Any, Any, Any]:
    """Compiled once per process: compiling a query costs milliseconds."""
    from tree_sitter import Parser
    from tree_sitter_language_pack import get_language

    spec = LANGUAGES[lang]
    language = get_language(lang)  # type: ignore[arg-type]
    parser = Parser(language)
    parser.timeout_micros = PARSE_TIMEOUT_US
    defs = language.query(spec.definitions)
    refs = language.query("[" + " ".join(f"({t})" for t in spec.references) + "] @ref")
    for q in (defs, refs):
        q.set_timeout_micros(QUERY_TIMEOUT_US)
    return parser, defs, refs


def _line_text(source: bytes, line_starts: list[int], row: int) -> str:
    start = line_starts[row] if row < len(line_starts) else len(source)
    end = source.find(b"\n", start, start + 4 * MAX_SIGNATURE_CHARS)
    raw = source[start : end if end != -1 else start + 4 * MAX_SIGNATURE_CHARS]
    text = raw.decode("utf-8", errors="replace").strip()
    if len(text) > MAX_SIGNATURE_CHARS:
        text = text[: MAX_SIGNATURE_CHARS - 1] + "…"
    return text


def _line_starts(source: bytes) -> list[int]:
    starts = [0]
    find = source.find
    at = find(b"\n")
    while at != -1:
        starts.append(at + 1)
        at = find(b"\n", at + 1)
    return starts


def extract(source: bytes, lang: str) -> Symbols:
    """The symbols of `source` parsed as `lang` (a key of LANGUAGES). Never raises for
    what the file holds; a parse or a query cut short says so in `note`."""
    parser, defs_query, refs_query = _parser_and_queries(lang)
    out = Symbols()
    try:
        tree = parser.parse(source)
    except ValueError:  # py-tree-sitter's word for a parse that ran out of time
        tree = None
    if tree is None:
        parser.reset()
        out.note = "parse timed out"
        return out
    root = tree.root_node
    best: dict[int, tuple[int, str, Any]] = {}  # name node's start -> (rank, kind, node)
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    for capture, nodes in defs_query.captures(root).items():
        kind = capture.removeprefix("def.")
        r = rank.get(kind, len(rank))
        for node in nodes:
            seen = best.get(node.start_byte)
            if seen is None or r < seen[0]:
                best[node.start_byte] = (r, kind, node)
    if defs_query.did_exceed_match_limit:
        out.note = "too many matches; some definitions left out"
    starts = _line_starts(source) if best else []
    for _, kind, node in sorted(best.values(), key=lambda b: b[2].start_byte)[:MAX_DEFINITIONS]:
        name = node.text.decode("utf-8", errors="replace")
        row = node.start_point[0]
        out.definitions.append(Definition(name, kind, row + 1, _line_text(source, starts, row)))
    counts: Counter[bytes] = Counter()
    for nodes in refs_query.captures(root).values():
        counts.update(n.text for n in nodes if n.start_byte not in best)
    out.references = {
        name.decode("utf-8", errors="replace"): n
        for name, n in counts.most_common(MAX_REFERENCE_NAMES)
        if len(name) <= 200
    }
    return out
