"""Harmony's (gpt-oss's) format record, built from the tags its parser module owns.

The tags are written once, in `agent.parsing.harmony`, beside the parser that reads
them; this record puts them to the other uses a format has (recognising the markup in a
chat template, the stop strings, writing and constraining a call) so that no other
module spells them out. It is a module of its own only to keep the parser's file short.
"""

from __future__ import annotations

import json

from agent.parsing.harmony_header import (
    CALL,
    CHANNEL,
    CONSTRAIN,
    END,
    FUNCTIONS,
    MESSAGE,
    RETURN,
    START,
)
from agent.parsing.record import Format, json_shape

_TO = "to=" + FUNCTIONS  # the recipient of a call


def _q(text: str) -> str:
    """A GBNF literal (the tags are plain ASCII: JSON quoting is GBNF quoting)."""
    return json.dumps(text)


HARMONY = Format(
    "gpt_oss_harmony",
    aliases=("harmony",),
    signature=((CHANNEL,), (_TO,)),
    stops=(CALL, RETURN),  # a call exists only once the call tag closes it: the parser reads it
    reasoning=None,  # reasoning is the analysis channel
    shape=json_shape(
        f"{CHANNEL}commentary {_TO}{{name}} {CONSTRAIN}json{MESSAGE}",
        CALL,
        join=END,
        # The recipient before or after the channel, analysis or commentary, with or
        # without a content type, after a reasoning message: all of it is gpt-oss.
        gbnf_head=f'( {_q(START)} ws "assistant" )? ( ws {_q(_TO)} {{name}} ws {_q(CHANNEL)}'
        f" ws harmony-channel | ws {_q(CHANNEL)} ws harmony-channel ws {_q(_TO)} {{name}} )"
        f' ( ws {_q(CONSTRAIN)} )? ( ws "json" )? ws {_q(MESSAGE)} ws',
        gbnf_prefix=f'( {_q(CHANNEL)} ws "analysis" ws {_q(MESSAGE)} [^<]* {_q(END)} ws'
        f' {_q(START)} ws "assistant" )?',
    ),
    template="harmony",  # bosun's templates/harmony.jinja speaks it
    turn_markers=(START, MESSAGE),
)
