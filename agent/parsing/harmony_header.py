"""Harmony's vocabulary (gpt-oss): its tags, a message header, a call's JSON body.

Kept apart from the stream parser so the format's record and the renderer read the tags
from one place without importing the parser's state machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agent import untrusted

# Harmony's tags are written here and nowhere else: other modules read them through the
# format's record (`agent.parsing.harmony_format.HARMONY`) or `HarmonyStreamParser.OPENERS`.
START, END, MESSAGE = "<|start|>", "<|end|>", "<|message|>"
CHANNEL, CONSTRAIN = "<|channel|>", "<|constrain|>"
RETURN, CALL = "<|return|>", "<|call|>"
MARKERS = (START, END, MESSAGE, CHANNEL, CONSTRAIN, RETURN, CALL)
FUNCTIONS = "functions."

_HEADER_SPLIT = re.compile(r"(<\|channel\|>|<\|constrain\|>)")
_CHANNELS = ("analysis", "commentary", "final")


@dataclass(slots=True)
class Header:
    role: str = "assistant"
    channel: str = ""
    recipient: str = ""


def parse_header(raw: str, after_start: bool) -> Header:
    """The role, channel and recipient of a header (the text before `<|message|>`).

    The recipient may stand in the role part or after the channel; the content type
    ("json", "<|constrain|>json") is ignored because a call body is always read as JSON.
    Without `<|start|>` the role is the assistant's (the prompt already wrote it)."""
    h = Header()
    section, role_seen, channel_seen = "role", not after_start, False
    for piece in _HEADER_SPLIT.split(raw):
        if piece in (CHANNEL, CONSTRAIN):
            section = "channel" if piece == CHANNEL else "type"
            continue
        for word in piece.split():
            if word.startswith("to="):
                h.recipient = word[3:]
            elif section == "role" and not role_seen:
                h.role, role_seen = word, True
            elif section == "role" and not h.channel and word in _CHANNELS:
                h.channel = word  # a caller that prefilled "<|channel|>"
            elif section == "channel" and not channel_seen:
                h.channel, channel_seen = word, True
    return h


def decode_arguments(body: str) -> tuple[dict[str, Any] | None, str]:
    """(arguments, "") or (None, why). A JSON string holding an object is accepted: models
    double-encode arguments often enough, and the intent is unambiguous."""
    try:
        value = untrusted.loads(body)
        if isinstance(value, str):
            value = untrusted.loads(value)
    except ValueError as exc:
        return None, str(exc) if body.strip() else "the body is empty"
    if not isinstance(value, dict):
        return None, f"the arguments are a JSON {type(value).__name__}, not an object"
    return value, ""
