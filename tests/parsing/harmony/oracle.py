"""OpenAI's own Harmony library (`openai_harmony`) as an oracle for bosun's gpt-oss prompts.

`encoding()` loads the reference encoding offline, from the vocabulary shipped in
tests/data/tiktoken (the package would otherwise download it). `conversation()` turns
bosun's history into the Harmony messages a caller of the library would build for the
same turns, `reference()` renders them, and the normalisers undo, one by one, the
deliberate deviations that tests/parsing/harmony/test_oracle.py lists and nothing else.

Without the package the tests skip; under CI (CI=true) they fail instead, so CI cannot
skip the oracle silently (install.sh --dev installs it).
"""

from __future__ import annotations

import functools
import itertools
import json
import lzma
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    Reasoning,
    System,
    ToolResult,
    User,
)

VOCAB = Path(__file__).resolve().parents[2] / "data" / "tiktoken" / "o200k_base.tiktoken.xz"
GPT_OSS = "gpt-oss-20b"


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def harmony() -> ModuleType:
    """The `openai_harmony` module; skipped without it, except under CI, where it fails."""
    if under_ci():
        try:
            import openai_harmony
        except ImportError as exc:  # pragma: no cover - CI's install.sh --dev installs it
            pytest.fail(f"CI must run the Harmony oracle tests, but {exc} (install.sh --dev)")
        return openai_harmony
    return pytest.importorskip("openai_harmony", reason="openai-harmony is a dev dependency")


@functools.cache
def _encoding() -> Any:
    h = harmony()
    folder = Path(tempfile.mkdtemp(prefix="bosun-tiktoken-"))
    (folder / "o200k_base.tiktoken").write_bytes(lzma.decompress(VOCAB.read_bytes()))
    # Read once, when the encoding loads; the library checks the file's SHA-256 itself.
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(folder)
    return h.load_harmony_encoding(h.HarmonyEncodingName.HARMONY_GPT_OSS)


def encoding() -> Any:
    """The HARMONY_GPT_OSS encoding (loaded once per process)."""
    harmony()  # skip, or fail under CI, before the cache could remember an error
    return _encoding()


# -- bosun's history as the library's messages ----------------------------------------


def tool_descriptions(tools: Sequence[dict[str, Any]]) -> list[Any]:
    h = harmony()
    out = []
    for spec in tools:
        fn = spec.get("function", spec)
        out.append(
            h.ToolDescription.new(fn["name"], fn.get("description", ""), fn.get("parameters"))
        )
    return out


def conversation(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] = (),
    *,
    date: str | None = None,
) -> Any:
    """The Harmony conversation a library user builds for these turns: bosun's first
    system message is the developer's instructions, a later one a developer message;
    prose just before a call is a commentary preamble, other prose the final answer;
    reasoning is analysis; a call is a commentary message to functions.NAME (arguments
    as bosun writes them); a result comes from functions.NAME to the assistant."""
    h = harmony()
    system = h.SystemContent.new().with_reasoning_effort(h.ReasoningEffort.MEDIUM)
    if date is not None:
        system = system.with_conversation_start_date(date)
    out = [h.Message.from_role_and_content(h.Role.SYSTEM, system)]
    rest = list(messages)
    developer = h.DeveloperContent.new()
    if rest and isinstance(rest[0], System):
        developer = developer.with_instructions(rest.pop(0).content)
    if tools:
        developer = developer.with_function_tools(tool_descriptions(tools))
    if (messages and isinstance(messages[0], System)) or tools:
        out.append(h.Message.from_role_and_content(h.Role.DEVELOPER, developer))
    names: dict[str, str] = {}
    for i, m in enumerate(rest):
        if isinstance(m, System):
            out.append(h.Message.from_role_and_content(h.Role.DEVELOPER, m.content))
        elif isinstance(m, User):
            out.append(h.Message.from_role_and_content(h.Role.USER, m.content))
        elif isinstance(m, Reasoning):
            out.append(_assistant(m.content, "analysis"))
        elif isinstance(m, Assistant):
            preamble = i + 1 < len(rest) and isinstance(rest[i + 1], AssistantToolUse)
            out.append(_assistant(m.content, "commentary" if preamble else "final"))
        elif isinstance(m, AssistantToolUse):
            names[m.call.id] = m.call.name
            body = json.dumps(m.call.arguments, ensure_ascii=False)
            out.append(
                _assistant(body, "commentary")
                .with_recipient(f"functions.{m.call.name}")
                .with_content_type("<|constrain|>json")
            )
        elif isinstance(m, ToolResult):
            author = h.Author.new(h.Role.TOOL, f"functions.{names[m.call_id]}")
            out.append(
                h.Message.from_author_and_content(author, m.content)
                .with_recipient("assistant")
                .with_channel("commentary")
            )
    return h.Conversation.from_messages(out)


def _assistant(content: str, channel: str) -> Any:
    h = harmony()
    return h.Message.from_role_and_content(h.Role.ASSISTANT, content).with_channel(channel)


def reference(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] = (),
    *,
    date: str | None = None,
) -> str:
    """The library's prompt for the next assistant turn, decoded to text (the tokens
    are compared separately, by `tokens_match`)."""
    enc = encoding()
    convo = conversation(messages, tools, date=date)
    return str(enc.decode(enc.render_conversation_for_completion(convo, harmony().Role.ASSISTANT)))


def tokens(text: str, data: Sequence[tuple[int, int]] = ()) -> list[int]:
    """`text` as gpt-oss tokens, its Harmony markers as the special tokens they are,
    except inside the `data` ranges (message text: `agent.protocol.render.data_spans`),
    which are ordinary text, as bosun's drivers send them."""
    enc = encoding()
    out: list[int] = []
    at = 0
    for start, end in [*data, (len(text), len(text))]:
        out += enc.encode(text[at:start], allowed_special="all")
        out += enc.encode(text[start:end], allowed_special=(), disallowed_special=())
        at = end
    return out


def messages_of(ids: Sequence[int]) -> list[list[int]]:
    """Token ids cut before each <|start|>: one list per message."""
    start = tokens("<|start|>")[0]
    cuts = [i for i, t in enumerate(ids) if t == start] + [len(ids)]
    return [list(ids[a:b]) for a, b in itertools.pairwise(cuts)]


# -- the deliberate deviations, undone one at a time ------------------------------------

# The library writes a call's recipient in the role header; gpt-oss itself, and bosun,
# after the channel ("<|channel|>commentary to=functions.x <|constrain|>json").
_ROLE_RECIPIENT = re.compile(
    r"<\|start\|>assistant to=(functions\.[\w.-]+)<\|channel\|>(\w+)(?= <\|constrain\|>)"
)
_ANALYSIS = re.compile(r"<\|start\|>assistant<\|channel\|>analysis<\|message\|>.*?<\|end\|>", re.S)
_DATE = re.compile(r"\nCurrent date: [^\n]*")


def recipient_after_channel(text: str) -> str:
    return _ROLE_RECIPIENT.sub(r"<|start|>assistant<|channel|>\2 to=\1", text)


def analysis_messages(text: str) -> list[str]:
    return _ANALYSIS.findall(text)


def without_analysis(text: str) -> str:
    return _ANALYSIS.sub("", text)


def without_date(text: str) -> str:
    return _DATE.sub("", text, count=1)
