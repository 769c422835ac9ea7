"""Which definitions matter: PageRank over the graph of files that use each other's
names, personalised by the files this session has touched.

A file that refers to a name defined in another file gets an edge to it, weighted by
how often it uses the name and how telling the name is (a long, specific name says
more than `get`; a private `_helper` or a name defined in many files says less; a name
the user mentioned says most). The rank of a definition is the share of rank that flows
into its file through its name. This is the idea aider's repo map made work for small
contexts; the arithmetic is a dozen lines of power iteration, so no graph library
(networkx would be a 4 MB dependency for one function).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent.tools.repomap.cache import Entry

DAMPING = 0.85
ITERATIONS = 40
TOLERANCE = 1e-6  # per node: ranks are compared, not printed
MANY_DEFINERS = 5  # a name defined in more files than this is too common to tell much
# …and one defined in more than this many tells nothing of which file a use means
# (`run`, `__init__`): left out of the graph, which keeps it at most this many edges
# per name a file uses
MAX_DEFINERS = 20
_SPECIFIC = re.compile(r"^(?=.{8,})([a-z0-9]+_[a-z0-9_]+|[A-Za-z][a-z0-9]+[A-Z]\w*)$")


@dataclass(frozen=True)
class Ranked:
    path: str
    name: str
    kind: str
    line: int
    signature: str
    score: float


def _weight(name: str, definers: int, mentioned: set[str]) -> float:
    w = 1.0
    if name in mentioned:
        w *= 10
    if _SPECIFIC.match(name):
        w *= 10
    if name.startswith("_"):
        w *= 0.1
    if definers > MANY_DEFINERS:
        w *= 0.1
    return w


def pagerank(
    nodes: list[str], edges: Mapping[str, Mapping[str, float]], personal: Mapping[str, float]
) -> dict[str, float]:
    """Stationary rank of a random walk that follows weighted edges with probability
    DAMPING and otherwise jumps to a node drawn from `personal` (uniform when empty);
    a node without out-edges jumps the same way. Lists indexed by node, not dicts:
    this runs at every request, and a warm map has half a second in all."""
    n = len(nodes)
    if n == 0:
        return {}
    index = {k: i for i, k in enumerate(nodes)}
    weights = [max(personal.get(k, 0.0), 0.0) for k in nodes]
    total = sum(weights)
    jump = [w / total for w in weights] if total > 0 else [1.0 / n] * n
    adjacency: list[tuple[int, list[tuple[int, float]]]] = []
    for src, dsts in edges.items():
        out = sum(dsts.values())
        if src in index and out > 0:
            pairs = [(index[d], w / out) for d, w in dsts.items() if d in index]
            adjacency.append((index[src], pairs))
    has_out = [False] * n
    for i, _ in adjacency:
        has_out[i] = True
    rank = list(jump)
    for _ in range(ITERATIONS):
        dangling = sum(r for r, out in zip(rank, has_out, strict=True) if not out)
        spread = DAMPING * dangling + (1 - DAMPING)
        nxt = [spread * j for j in jump]
        for i, pairs in adjacency:
            share = DAMPING * rank[i]
            for j, w in pairs:
                nxt[j] += share * w
        delta = sum(abs(a - b) for a, b in zip(nxt, rank, strict=True))
        rank = nxt
        if delta < TOLERANCE * n:
            break
    return dict(zip(nodes, rank, strict=True))


def _known(files: Mapping[str, Entry], personal: Mapping[str, float]) -> dict[str, float]:
    """`personal` on the mapped paths: a name such as "runtime.py" counts for every
    mapped file that ends in it; paths that name nothing mapped drop out."""
    out: dict[str, float] = {}
    for key, weight in list(personal.items())[:200]:
        if key in files:
            out[key] = out.get(key, 0.0) + weight
            continue
        for path in files:
            if path.endswith("/" + key):
                out[path] = out.get(path, 0.0) + weight
    return out


def rank_definitions(
    files: Mapping[str, Entry],
    personal: Mapping[str, float] = {},
    mentioned: Iterable[str] = (),
) -> list[Ranked]:
    """Every definition in `files`, most important first."""
    mentioned = set(mentioned)
    personal = _known(files, personal)
    definers: dict[str, set[str]] = defaultdict(set)
    for path, entry in files.items():
        for name, *_ in entry["defs"]:
            definers[name].add(path)
    edges: dict[str, dict[str, float]] = {}
    uses: list[tuple[str, str, str, float]] = []  # (src, dst, name, weight)
    for src, entry in files.items():
        out = edges[src] = {}
        for name, count in entry["refs"].items():
            where = definers.get(name)
            if not where or len(where) > MAX_DEFINERS:
                continue
            # an ambiguous name's use is shared among the files that define it
            w = _weight(name, len(where), mentioned) * math.sqrt(max(count, 1)) / len(where)
            for dst in where:
                out[dst] = out.get(dst, 0.0) + w
                uses.append((src, dst, name, w))
    nodes = sorted(files)
    rank = pagerank(nodes, edges, personal)
    totals = {src: sum(out.values()) for src, out in edges.items()}
    score: dict[tuple[str, str], float] = defaultdict(float)
    for src, dst, name, w in uses:
        score[(dst, name)] += rank[src] * w / totals[src]
    ranked = []
    for path, entry in files.items():
        base = rank.get(path, 0.0) * 1e-3 / max(len(entry["defs"]), 1)
        boost = 10.0 if path in personal else 1.0
        for name, kind, line, signature in entry["defs"]:
            s = (score.get((path, name), 0.0) + base) * boost
            if name in mentioned:
                s *= 10
            ranked.append(Ranked(path, name, kind, line, signature, s))
    ranked.sort(key=lambda r: (-r.score, r.path, r.line))
    return ranked
