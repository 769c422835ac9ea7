"""The `<tool_call>` -> `[[CALL]]` tag remap, a pure transform at the driver boundary.

Where bosun has to write its own tool instructions for a model (its template has no tool
support) and that model's tokenizer holds `<tool_call>` as one reserved token, every
instruction, example and past call would put that token where the model never saw it in
training. There, and only there (the model profile decides, `agent.protocol.profile`), the
driver boundary speaks `[[CALL]] … [[/CALL]]` instead; history, session files, traces
and cache keys stay canonical, so switching models mid-session is always correct.
"""

from __future__ import annotations

from agent.markup import (
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    WIRE_CALL_CLOSE,
    WIRE_CALL_OPEN,
    partial_suffix,
)

_WIRE_MARKERS = (WIRE_CALL_OPEN, WIRE_CALL_CLOSE)


def canonical_to_wire(text: str) -> str:
    """Canonical prompt text -> wire form. Idempotent."""
    return text.replace(TOOL_CALL_OPEN, WIRE_CALL_OPEN).replace(TOOL_CALL_CLOSE, WIRE_CALL_CLOSE)


def wire_to_canonical(text: str) -> str:
    """Wire-form model output -> canonical text. Idempotent; inverts canonical_to_wire
    on text that did not already contain wire markers."""
    return text.replace(WIRE_CALL_OPEN, TOOL_CALL_OPEN).replace(WIRE_CALL_CLOSE, TOOL_CALL_CLOSE)


class WireDecoder:
    """Streaming wire_to_canonical: any chunking gives the same text as one call.

    A chunk that ends in what may be the start of a marker ("[[CA") is held back until
    the next chunk settles it; at most 8 characters are ever held, so the work per
    chunk is proportional to the chunk.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, chunk: str) -> str:
        text = self._held + chunk
        if "[" not in text:
            self._held = ""
            return text
        text = wire_to_canonical(text)
        keep = partial_suffix(text, _WIRE_MARKERS)
        self._held = text[len(text) - keep :]
        return text[: len(text) - keep]

    def finish(self) -> str:
        held, self._held = self._held, ""
        return wire_to_canonical(held)
