"""Model output -> prose, reasoning and structured tool calls. Never raises on model text.

`parse_tool_calls` and `GenericStreamParser` are one code path (the one-shot parse is
the stream parser fed everything at once), so streaming and non-streaming agree.
"""

from agent.parsing.base import Event, ParseResult, coalesce
from agent.parsing.formats import FORMATS
from agent.parsing.harmony import HarmonyStreamParser
from agent.parsing.select import parse_tool_calls, parser_for
from agent.parsing.stream import GenericStreamParser

__all__ = [
    "FORMATS",
    "Event",
    "GenericStreamParser",
    "HarmonyStreamParser",
    "ParseResult",
    "coalesce",
    "parse_tool_calls",
    "parser_for",
]
