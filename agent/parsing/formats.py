"""The tool-call formats bosun knows by name: the registry of their records, and views.

Everything about a format is in its one `Format` record (`agent.parsing.record`; the
records are kept in `catalog_1`, `catalog_2`, `catalog_3` and, for harmony, beside its
parser).
`REGISTRY` holds them in catalogue order; the tables below are computed from it for the
code that asks one question of every format (which names exist, which markers identify
which format, which stops a format's parser reads), so no fact is written twice.

The names are the ones llama.cpp's parser tests use for the same formats (the shared
corpus of model outputs is keyed by them), so a case, a profile and a parser agree on
what "glm45" means. The model profile (`agent.protocol.profile`) picks a format by
rendering a sample call through the model's own template and matching the markup it
prints against `SIGNATURES`, most specific first.
"""

from __future__ import annotations

from agent.parsing import catalog_1, catalog_2, catalog_3
from agent.parsing.record import THINK_PAIR, Format

_RECORDS = (*catalog_1.RECORDS, *catalog_2.RECORDS, *catalog_3.RECORDS)
REGISTRY: dict[str, Format] = {f.name: f for f in _RECORDS}

# Which format's signature is tried first: one format's markers can contain another's
# (every qwen3_coder_xml call is also a hermes <tool_call>), so the more specific goes
# first. An order between formats, not a fact of any one of them, hence here.
SIGNATURE_ORDER: tuple[str, ...] = (
    "muse_atem",
    "gpt_oss_harmony",
    "seed_oss",
    "minimax_m2",
    "deepseek_dsml",
    "olmo3",
    "internlm2",
    "deepseek_v3_r1",
    "deepseek_v31",
    "kimi_k2",
    "gemma4",
    "mistral_v11",
    "mistral_json",
    "command_r7b",
    "nemotron_toolcall",
    "apertus",
    "lfm2",
    "pythonic",  # after lfm2: its calls are a Python list inside its own tags
    "solar_open",
    "hy3_xml",
    "kimi_k3",
    "minimax_m3",
    "gigachat3",
    "minicpm5_xml",
    "glm45",
    "qwen3_coder_xml",
    "functionary_v31",
    "functionary_v32",
    "phi4_mini",  # before firefunction_v2 and granite, whose markers it shares
    "firefunction_v2",
    "granite",
    "apriel",
    "minimax_m1",
    "hermes",
    "command_r_plus",
    "llama3_json",
)

# Reasoning markers models use where no format owns them (`THINK_PAIR`, Kimi VL's), and
# the order all known pairs are tried in where a template names several: the first
# listed wins. A name stands for that format's own pair.
_KIMI_VL_PAIR = ("◁think▷", "◁/think▷")
_REASONING_ORDER: tuple[str | tuple[str, str], ...] = (
    "seed_oss",
    "hy3_xml",  # Hunyuan 3
    "minimax_m3",
    THINK_PAIR,
    "mistral_v11",  # Magistral, Ministral 3
    _KIMI_VL_PAIR,
    "command_r7b",
    "gemma4",
    "apertus",
    "kimi_k3",
    "apriel",
    "solar_open",
)

# -- views ---------------------------------------------------------------------------

FORMATS: tuple[str, ...] = tuple(REGISTRY)

# Older or peer names for the same formats.
ALIASES: dict[str, str] = {alias: f.name for f in REGISTRY.values() for alias in f.aliases}

# Formats whose calls are wrapped in <tool_call>…</tool_call>: the only ones the tag
# remap (agent.parsing.wire) can apply to.
ENVELOPED = frozenset(f.name for f in REGISTRY.values() if f.enveloped)

# Formats whose end-of-message tokens the parser itself reads, with the stop strings
# that end such a reply.
FORMAT_STOPS: dict[str, tuple[str, ...]] = {f.name: f.stops for f in REGISTRY.values() if f.stops}

# What the markup of one call contains, most specific first. Every marker listed for a
# format must occur.
SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (name, markers) for name in SIGNATURE_ORDER for markers in REGISTRY[name].signature
)


def _pair(entry: str | tuple[str, str]) -> tuple[str, str]:
    """An entry of `_REASONING_ORDER` as its pair: a format's name reads its record."""
    if isinstance(entry, tuple):
        return entry
    pair = REGISTRY[entry].reasoning
    if pair is None:
        raise ValueError(f"{entry} has no reasoning markers to order")
    return pair


# Reasoning markers models use, (open, close), in the order they are tried.
REASONING_PAIRS: tuple[tuple[str, str], ...] = tuple(map(_pair, _REASONING_ORDER))

# The reasoning markers a format's models use where no template says otherwise (a parse
# without a profile), for the formats whose models do not write `THINK_PAIR`; the
# profile's own markers win. Read it as `FORMAT_REASONING.get(name, THINK_PAIR)`.
FORMAT_REASONING: dict[str, tuple[str, str] | None] = {
    f.name: f.reasoning for f in REGISTRY.values() if f.reasoning != THINK_PAIR
}


def _check() -> None:
    """The order tables name every format that needs a place in them, and nothing else:
    a record added without one would otherwise never be recognised, or its reasoning
    markers never tried, with no error anywhere."""
    if len(REGISTRY) != len(_RECORDS):
        raise ValueError("two format records have one name")
    signed = {f.name for f in REGISTRY.values() if f.signature}
    if set(SIGNATURE_ORDER) != signed or len(SIGNATURE_ORDER) != len(signed):
        raise ValueError(f"SIGNATURE_ORDER must list each of {sorted(signed)} once")
    own = {f.reasoning for f in REGISTRY.values() if f.reasoning is not None}
    if not own <= set(REASONING_PAIRS):
        raise ValueError(f"reasoning pairs not in _REASONING_ORDER: {own - set(REASONING_PAIRS)}")
    aliases = [alias for f in REGISTRY.values() for alias in f.aliases]
    if len(set(aliases)) != len(aliases) or set(aliases) & set(REGISTRY):
        raise ValueError("an alias names two formats, or is a format's own name")


_check()


def canonical_format(name: str) -> str:
    """The FORMATS name for `name` or one of its aliases; ValueError if unknown."""
    if name in REGISTRY:
        return name
    if name in ALIASES:
        return ALIASES[name]
    raise ValueError(f"unknown tool-call format {name!r}; known: {', '.join(FORMATS)}")


def format_record(name: str) -> Format:
    """The record of `name` (a FORMATS name or alias); ValueError if unknown."""
    return REGISTRY[canonical_format(name)]


def format_of_markup(markup: str) -> str | None:
    """The format whose signature `markup` (one rendered call) carries, if any."""
    for name, markers in SIGNATURES:
        if all(m in markup for m in markers):
            return name
    return None
