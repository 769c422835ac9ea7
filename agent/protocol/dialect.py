"""How one chat template wants the history shaped, found by rendering a probe.

Templates disagree on the message dicts they accept: most want tool-call arguments as a
dict, functionary wants a JSON string; Mistral Nemo insists on 9-character alphanumeric
call ids; Gemma 2 refuses a system role; many render no tool definitions, tool calls or
tool results at all. Rather than keep a list of model quirks, bosun renders a small
probe conversation once per template source, in a few shapes, and keeps the first shape
under which the most of the probe survives. Any part the template still drops gets bosun's
fallback: definitions in the system message (templates/tools.jinja), calls as canonical
`<tool_call>` JSON in the assistant turn, results as `<tool_result>` in a user turn.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    Reasoning,
    System,
    ToolCall,
    ToolResult,
    User,
)
from agent.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, TOOL_RESULT_CLOSE, TOOL_RESULT_OPEN


@dataclass(frozen=True)
class Dialect:
    """The message shape one template gets. Defaults are the HF/OpenAI convention."""

    native_tools: bool = True  # template prints `tools`
    native_calls: bool = True  # template prints assistant `tool_calls`
    native_results: bool = True  # template prints `tool` role messages
    arguments_as_string: bool = False  # functionary v3.2 concatenates them as text
    system_role: bool = True  # Gemma 2 raises on a system message
    short_ids: bool = False  # Mistral Nemo: ids must be [a-zA-Z0-9]{9}
    single_call: bool = False  # Llama 3.1 raises on two tool_calls in one message
    null_content: bool = False  # DeepSeek R1 prints calls only when content is None
    split_prose: bool = False  # DeepSeek R1 drops the calls of a message with prose


FALLBACK = Dialect(native_tools=False, native_calls=False, native_results=False)

_ALNUM = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def short_id(call_id: str) -> str:
    """A stable 9-character alphanumeric id for `call_id` (same input, same output)."""
    if len(call_id) == 9 and all(c in _ALNUM for c in call_id):
        return call_id
    n = int.from_bytes(hashlib.sha256(call_id.encode("utf-8")).digest()[:8], "big")
    out = []
    for _ in range(9):
        n, r = divmod(n, len(_ALNUM))
        out.append(_ALNUM[r])
    return "".join(out)


def envelope(name: str, arguments: dict[str, Any]) -> str:
    """bosun's canonical tool-call text, the same bytes chatml.jinja prints."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{TOOL_CALL_OPEN}\n{body}\n{TOOL_CALL_CLOSE}"


def result_block(content: str) -> str:
    return f"{TOOL_RESULT_OPEN}\n{content}\n{TOOL_RESULT_CLOSE}"


def to_template_messages(
    messages: Sequence[Message],
    dialect: Dialect = Dialect(),
    tool_block: str = "",
    write_call: Callable[[str, dict[str, Any]], str] | None = None,
) -> list[dict[str, Any]]:
    """History -> fresh OpenAI-style message dicts shaped for one template.

    Prose and the tool calls of one assistant turn become one assistant message; each
    ToolResult becomes a `tool` message that also carries the tool's name, which some
    templates print. `tool_block` (the fallback tool definitions) is appended to the
    system message, or becomes one when the history has none. Every dict is new, so a
    template that mutates what it is given cannot reach the caller's data.
    """
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    results_at: int | None = None  # the fallback user message collecting tool results
    if tool_block and not (messages and isinstance(messages[0], System)):
        out.append({"role": "system", "content": tool_block.lstrip("\n")})
    for m in messages:
        if isinstance(m, System):
            content = m.content + tool_block if not out else m.content
            out.append({"role": "system", "content": content})
        elif isinstance(m, User):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, Reasoning):
            out.append({"role": "assistant", "content": "", **reasoning_fields(m.content)})
        elif isinstance(m, Assistant) and _opened_by_reasoning(out):
            out[-1]["content"] = m.content
        elif isinstance(m, Assistant):
            out.append({"role": "assistant", "content": m.content})
        elif isinstance(m, AssistantToolUse):
            _add_call(out, m, dialect, write_call or envelope)
            names[m.call.id] = m.call.name
        elif isinstance(m, ToolResult) and not dialect.native_results:
            if results_at is not None and results_at == len(out) - 1:
                out[-1]["content"] += "\n" + result_block(m.content)
            else:
                out.append({"role": "user", "content": result_block(m.content)})
                results_at = len(out) - 1
        elif isinstance(m, ToolResult):
            call_id = short_id(m.call_id) if dialect.short_ids else m.call_id
            name = names.get(m.call_id, "")
            out.append(
                {"role": "tool", "tool_call_id": call_id, "name": name, "content": m.content}
            )
    if not dialect.system_role and out and out[0]["role"] == "system":
        _fold_system(out)
    if dialect.null_content:
        for msg in out:
            if msg.get("tool_calls") and not msg["content"]:
                msg["content"] = None
    return out


# Templates disagree on the key: llama.cpp and vLLM send `reasoning_content`, gpt-oss's
# template reads `thinking`, a few read `reasoning`. The ones that know several take
# the first present, so setting all three prints it once.
REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")


def reasoning_fields(text: str) -> dict[str, str]:
    return dict.fromkeys(REASONING_KEYS, text)


def chat_messages(history: Sequence[Message]) -> list[dict[str, Any]]:
    """Structured history -> the `messages` of a chat-completions request.

    The same shaping as a local template gets (one assistant message per turn, with its
    reasoning and calls), in the API's own terms: arguments as JSON strings, reasoning
    only as `reasoning_content` (what llama.cpp and vLLM read back), and tool messages
    without the `name` that only some local templates print. Errors need no flag: their
    content already says "Error: …".
    """
    out = to_template_messages(history, Dialect(arguments_as_string=True))
    for message in out:
        for key in (*REASONING_KEYS[1:], "name"):
            message.pop(key, None)
    return out


def _opened_by_reasoning(out: list[dict[str, Any]]) -> bool:
    """The last message is an assistant turn that so far holds only its reasoning."""
    last = out[-1] if out else {}
    return (
        last.get("role") == "assistant"
        and REASONING_KEYS[0] in last
        and not last["content"]
        and "tool_calls" not in last
    )


def _add_call(
    out: list[dict[str, Any]],
    m: AssistantToolUse,
    dialect: Dialect,
    write_call: Callable[[str, dict[str, Any]], str],
) -> None:
    prev = out[-1] if out and out[-1]["role"] == "assistant" else None
    if not dialect.native_calls:
        text = write_call(m.call.name, m.call.arguments)
        if prev is None:
            out.append({"role": "assistant", "content": text})
        else:
            prev["content"] = f"{prev['content']}\n{text}" if prev["content"] else text
        return
    arguments: Any = m.call.arguments
    if dialect.arguments_as_string:
        arguments = json.dumps(arguments, ensure_ascii=False)
    call = {
        "id": short_id(m.call.id) if dialect.short_ids else m.call.id,
        "type": "function",
        "function": {"name": m.call.name, "arguments": arguments},
    }
    if prev is not None and dialect.single_call and "tool_calls" in prev:
        prev = None
    if prev is not None and dialect.split_prose and "tool_calls" not in prev and prev["content"]:
        prev = None  # the prose stays a message of its own, so the calls are shown
    if prev is None:
        out.append({"role": "assistant", "content": "", "tool_calls": [call]})
    else:
        prev.setdefault("tool_calls", []).append(call)


def _fold_system(out: list[dict[str, Any]]) -> None:
    # Gemma 2 style: the system text opens the first user turn. Folding into the first
    # user message (not the latest) keeps every later prompt's prefix unchanged.
    system = out.pop(0)["content"]
    for msg in out:
        if msg["role"] == "user":
            msg["content"] = f"{system}\n\n{msg['content']}" if msg["content"] else system
            return
    out.insert(0, {"role": "user", "content": system})


# --- probing -----------------------------------------------------------------------

_PROBE_TOOL = "bosunprobedefinedtool"
_PROBE_CALL = "bosunprobecalledtool"
_PROBE_ARGS = ("bosunprobeargone", "bosunprobeargtwo")
_PROBE_RESULTS = ("bosunproberesultone", "bosunproberesulttwo")
_PROBE_PROSE = "bosunprobepreamble"
_PROBE_SYSTEM = "bosunprobesystem"
_PROBE_USER = "bosunprobequestion"
PROBE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": "Probe tool.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "A path."}},
                "required": ["path"],
            },
        },
    }
    for name in (_PROBE_TOOL, _PROBE_CALL)
]
# The shape of a real agent turn: prose, two calls in one turn, their two results. What
# a template does with the prose of a tool-calling turn (Llama 3.1 and Hermes drop it)
# is the template's choice and is not scored: the model was trained on that.
PROBE_HISTORY: list[Message] = [
    System(_PROBE_SYSTEM),
    User(_PROBE_USER),
    Assistant(_PROBE_PROSE),
    AssistantToolUse(ToolCall("call_1", _PROBE_CALL, {"path": _PROBE_ARGS[0]})),
    AssistantToolUse(ToolCall("call_2", _PROBE_CALL, {"path": _PROBE_ARGS[1]})),
    ToolResult("call_1", _PROBE_RESULTS[0]),
    ToolResult("call_2", _PROBE_RESULTS[1]),
    Assistant("Probe answer."),
    User("Probe follow-up?"),
]

# Shapes in the order tried, fewest deviations from the HF convention first.
_SHAPES: tuple[Dialect, ...] = tuple(
    Dialect(
        arguments_as_string=string_args,
        system_role=not fold,
        short_ids=short,
        single_call=single,
        null_content=null,
        split_prose=split,
    )
    for null, split in ((False, False), (True, False), (True, True))
    for fold in (False, True)
    for single in (False, True)
    for short in (False, True)
    for string_args in (False, True)
)

RenderFn = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], str]


def _survivors(shape: Dialect, text: str) -> Dialect:
    """`shape` with every part the template dropped from `text` moved to the fallback."""
    return replace(
        shape,
        native_tools=shape.native_tools and _PROBE_TOOL in text,
        native_calls=shape.native_calls
        and _PROBE_CALL in text
        and all(a in text for a in _PROBE_ARGS),
        native_results=shape.native_results and all(r in text for r in _PROBE_RESULTS),
        # Mistral Nemo prints the system prompt inside the *last* user turn only, so it
        # vanishes once the model replies; opening the first user turn with it keeps it
        # in every prompt, at a fixed place.
        system_role=shape.system_role and -1 < text.find(_PROBE_SYSTEM) < text.find(_PROBE_USER),
    )


def _score(shape: Dialect, text: str) -> int:
    kept = _survivors(shape, text)
    return (
        kept.native_tools
        + kept.native_calls
        + kept.native_results
        + (kept.system_role == shape.system_role)
    )


def probe(render: RenderFn) -> Dialect:
    """The shape under which the template keeps most of the probe, the rest on fallback.

    `render(template_messages, tools)` runs the template. Shapes are tried in order and
    the first that keeps everything wins, so a conventional template costs one render;
    a quirky one costs at most one per shape, once per process. If no shape renders, the
    plain convention is returned and the real render reports the template's own error.
    """
    best: tuple[int, Dialect, str] | None = None
    for shape in _SHAPES:
        text = _try(render, shape)
        if text is None:
            continue
        score = _score(shape, text)
        if best is None or score > best[0]:
            best = (score, shape, text)
        if score == 4:
            break
    if best is None:
        for shape in (FALLBACK, replace(FALLBACK, system_role=False)):
            if _try(render, shape) is not None:
                return shape
        return Dialect()
    _, shape, text = best
    kept = _survivors(shape, text)
    tool_unaware = not (kept.native_tools or kept.native_calls)
    if tool_unaware and kept.native_results and _prints_any_role(render, kept):
        kept = replace(kept, native_results=False)
    if kept != shape and _try(render, kept) is None:
        return replace(FALLBACK, system_role=kept.system_role)
    return kept


def _prints_any_role(render: RenderFn, shape: Dialect) -> bool:
    """True when the template shows a `tool` message as it would any unknown role.

    SmolLM2's own template prints "<|im_start|>tool" for a result only because it prints
    every role that way; the model never learned that role. A template that knows
    neither tools nor tool calls and does this gets results as <tool_result> blocks in a
    user turn, the format bosun's tool block announces. (Tool-aware templates such as
    Seed-OSS or LFM2.5 print the tool role generically on purpose, so they keep it.)
    """
    alias = "bosunprobeunknownrole"
    plain = _try(render, shape)
    msgs = to_template_messages(PROBE_HISTORY, shape, _probe_block(shape))
    for msg in msgs:
        if msg["role"] == "tool":
            msg["role"] = alias
    try:
        aliased = render(msgs, PROBE_TOOLS if shape.native_tools else None)
    except Exception:  # the template's own failure, as in _try
        return False
    return plain is not None and aliased.replace(alias, "tool") == plain


def _probe_block(shape: Dialect) -> str:
    return "" if shape.native_tools else f"\n\n{_PROBE_TOOL}"


def _try(render: RenderFn, dialect: Dialect) -> str | None:
    msgs = to_template_messages(PROBE_HISTORY, dialect, _probe_block(dialect))
    try:
        return render(msgs, PROBE_TOOLS if dialect.native_tools else None)
    except Exception:
        # Only the template runs here (the dicts were built above), so whatever it
        # raises, raise_exception or a TypeError from adding a dict to a string, means
        # "this shape does not suit this template".
        return None
