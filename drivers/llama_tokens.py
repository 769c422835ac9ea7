"""The vocabulary's text side for the in-process driver: a token's bytes, and which
tokens are control tokens, so a prompt's message text can be kept from holding any.

Apart from the driver because it is asked per token, by the tokenizer and the decode
loop alike, and knows nothing of generation.
"""

from __future__ import annotations

import bisect
import ctypes
from collections.abc import Sequence
from typing import Any


class VocabText:
    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self._known: dict[int, bool] = {}

    def is_control(self, token: int) -> bool:
        """Does the tokenizer produce `token` only when told to parse special tokens?"""
        known = self._known.get(token)
        if known is None:
            import llama_cpp

            attr = llama_cpp.llama_vocab_get_attr(self._llm._model.vocab, token)
            known = bool(
                attr & (llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_UNKNOWN)
            )
            self._known[token] = known
        return known

    def as_data(self, text: str, tokens: list[int], spans: Sequence[tuple[int, int]]) -> list[int]:
        starts = [a for a, _ in spans]
        out: list[int] = []
        cursor = last = 0
        for i, token in enumerate(tokens):
            if not self.is_control(token):
                continue
            piece = self.piece(token).decode("utf-8", errors="replace")
            at = text.find(piece, cursor) if piece else -1
            if at < 0:
                continue
            cursor = at + len(piece)
            k = bisect.bisect_right(starts, at) - 1
            if k >= 0 and cursor <= spans[k][1]:
                out += tokens[last:i]
                out += self._llm.tokenize(piece.encode("utf-8"), add_bos=False, special=False)
                last = i + 1
        return out + tokens[last:] if last else tokens

    def piece(self, token: int) -> bytes:
        import llama_cpp

        size = 64
        while True:
            buf = ctypes.create_string_buffer(size)
            n = llama_cpp.llama_token_to_piece(self._llm._model.vocab, token, buf, size, 0, True)
            if n >= 0:
                return buf.raw[:n]
            size = -n
