"""Call bodies whose arguments are written as text (XML-like tags, Gemma 4; Python
is `agent.parsing.decoders_python`'s):
each value is typed by the tool's schema (`agent.parsing.typed`).

Readers are regular expressions over a body whose end the stream parser already found,
so each runs once per call, in time linear in the body. None raises.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agent.parsing.decoders import bare_json
from agent.parsing.native import Item, Schemas
from agent.parsing.typed import typed_arguments, typed_value

Pairs = list[tuple[str, str]]


def _strip_one_newline(value: str) -> str:
    """Qwen3-Coder and Seed put a value on lines of its own: that newline is layout."""
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def _cut_off(name: str) -> str:
    return f"your call to {name} was cut off before it ended; it was not run"


def _never_closed(body: str, closer: str, start: int, closed: bool) -> bool:
    """A call starting at `start` of a region that was cut off, with no `closer` after
    it: a cut-off call, never run (searched in place, without copying the rest)."""
    return not closed and body.find(closer, start) < 0


def xml_family(
    call: str, param: str, *, call_end: str, value: Callable[[str], str] = _strip_one_newline
) -> Callable[[str, bool, Schemas], list[Item]]:
    """Calls matching `call` (its group 1 the name, group 2 the inside), parameters
    matching `param` (group 1 the key, group 2 the value), in the body in order."""
    call_re, param_re = re.compile(call, re.S), re.compile(param, re.S)

    def decode(body: str, closed: bool, schemas: Schemas) -> list[Item]:
        items: list[Item] = []
        for m in call_re.finditer(body):
            name = m.group(1).strip()
            inner = m.group(2) or ""
            if not name:
                items.append("your tool call has no name")
                continue
            if _never_closed(body, call_end, m.start(), closed):
                items.append(_cut_off(name))
                continue
            pairs = [(p.group(1).strip(), value(p.group(2))) for p in param_re.finditer(inner)]
            items.append((name, typed_arguments(name, pairs, schemas)))
        if not items and body.strip():
            items.append("your tool call could not be read: it has no function name")
        return items

    return decode


# Qwen3-Coder, Nemotron 3, Step 3.5, Qwen3.5 (inside <tool_call>, or with it left out)
# and Seed-OSS (inside <seed:tool_call>).
_QWEN_CALL = r"<function=([^>\n]*)>(.*?)(?:</function>|\Z)"
_QWEN_PARAM = r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|\Z)"
qwen3_xml_calls = xml_family(_QWEN_CALL, _QWEN_PARAM, call_end="</function>")
# Seed-OSS writes values inline, so a newline at either end of one is part of the value.
seed_calls = xml_family(_QWEN_CALL, _QWEN_PARAM, call_end="</function>", value=lambda v: v)


def qwen3_xml(body: str, closed: bool, schemas: Schemas) -> list[Item]:
    if body.lstrip().startswith(("{", "[")):  # a Hermes JSON body in the same envelope
        return bare_json(body, closed, schemas) or ["your tool call was empty"]
    return qwen3_xml_calls(body, closed, schemas)


# MiniMax-M2: <invoke name="N"><parameter name="K">V</parameter></invoke>
minimax_m2 = xml_family(
    r'<invoke name="([^"]*)">(.*?)(?:</invoke>|\Z)',
    r'<parameter name="([^"]*)">(.*?)(?:</parameter>|\Z)',
    call_end="</invoke>",
)
# DeepSeek V3.2 / V4 DSML: <｜DSML｜invoke name="N"><｜DSML｜parameter name="K" string="…">V
_DSML_PARAM = re.compile(
    r'<｜DSML｜parameter name="([^"]*)"(?: string="(true|false)")?>'
    r"(.*?)(?:</｜DSML｜parameter>|\Z)",
    re.S,
)
_DSML_CALL = re.compile(r'<｜DSML｜invoke name="([^"]*)">(.*?)(?:</｜DSML｜invoke>|\Z)', re.S)


def deepseek_dsml(body: str, closed: bool, schemas: Schemas) -> list[Item]:
    items: list[Item] = []
    for m in _DSML_CALL.finditer(body):
        name = m.group(1).strip()
        if _never_closed(body, "</｜DSML｜invoke>", m.start(), closed):
            items.append(_cut_off(name))
            continue
        args: dict[str, Any] = {}
        for p in _DSML_PARAM.finditer(m.group(2)):
            key, is_string, raw = p.group(1), p.group(2), p.group(3)
            args[key] = raw if is_string == "true" else typed_value(raw, None)
            if is_string is None:
                args[key] = typed_arguments(name, [(key, raw)], schemas)[key]
        items.append((name, args))
    return items or (["your tool call has no <｜DSML｜invoke name=…>"] if body.strip() else [])


# GLM-4.5/4.6/4.7, Ling, Laguna: NAME<arg_key>K</arg_key><arg_value>V</arg_value>
_GLM_PAIR = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)(?:</arg_value>|\Z)", re.S)


def glm45(body: str, closed: bool, schemas: Schemas) -> list[Item]:
    if body.lstrip().startswith(("{", "[")):
        return bare_json(body, closed, schemas) or ["your tool call was empty"]
    name, _, _ = body.partition("<arg_key>")
    name = name.strip()
    if not name:
        return ["your tool call has no function name before its <arg_key> tags"]
    if not closed:  # GLM writes </tool_call> itself: without it the call was cut off
        return [_cut_off(name)]
    pairs = [(m.group(1).strip(), m.group(2)) for m in _GLM_PAIR.finditer(body)]
    return [(name, typed_arguments(name, pairs, schemas))]


# Hunyuan 3: the GLM shape with ":opensource" tags inside <tool_calls:opensource>.
_HY3_CALL = re.compile(r"<tool_call:opensource>(.*?)(?:</tool_call:opensource>|\Z)", re.S)
_HY3_PAIR = re.compile(
    r"<arg_key:opensource>(.*?)</arg_key:opensource>\s*"
    r"<arg_value:opensource>(.*?)(?:</arg_value:opensource>|\Z)",
    re.S,
)


def hy3_xml(body: str, closed: bool, schemas: Schemas) -> list[Item]:
    items: list[Item] = []
    for m in _HY3_CALL.finditer(body):
        name, _, rest = m.group(1).partition("<tool_sep:opensource>")
        name = name.strip()
        if _never_closed(body, "</tool_call:opensource>", m.start(), closed):
            items.append(_cut_off(name))
            continue
        pairs = [(p.group(1).strip(), p.group(2)) for p in _HY3_PAIR.finditer(rest)]
        items.append((name, typed_arguments(name, pairs, schemas)))
    return items


# MiniMax-M3: ]<]minimax[>[ separates every tag; keys are tag names.
_M3_SEP = "]<]minimax[>["
_M3_CALL = re.compile(r'<invoke name="([^"]*)">(.*?)(?:</invoke>|\Z)', re.S)
_M3_PARAM = re.compile(r"<([A-Za-z_][\w.\-]*)>(.*?)</\1>", re.S)


def minimax_m3(body: str, closed: bool, schemas: Schemas) -> list[Item]:
    text = body.replace(_M3_SEP, "")
    items: list[Item] = []
    for m in _M3_CALL.finditer(text):
        name = m.group(1).strip()
        if _never_closed(text, "</invoke>", m.start(), closed):
            items.append(_cut_off(name))
            continue
        pairs = [(p.group(1), p.group(2)) for p in _M3_PARAM.finditer(m.group(2))]
        items.append((name, typed_arguments(name, pairs, schemas)))
    return items


# Kimi K3: <|open|>call tool="N" index="1"<|sep|><|open|>argument key="K" type="T"<|sep|>V
_K3_CALL = re.compile(
    r'<\|open\|>call tool="([^"]*)"[^<]*?<\|sep\|>(.*?)(?:<\|close\|>call<\|sep\|>|\Z)', re.S
)
_K3_ARG = re.compile(
    r'<\|open\|>argument key="([^"]*)"(?: type="([^"]*)")?<\|sep\|>(.*?)'
    r"(?:<\|close\|>argument<\|sep\|>|\Z)",
    re.S,
)
_K3_JSON = re.compile(
    r'<\|open\|>json type="[^"]*"<\|sep\|>(.*?)(?:<\|close\|>json<\|sep\|>|\Z)', re.S
)


def kimi_k3(body: str, closed: bool, schemas: Schemas) -> list[Item]:
    items: list[Item] = []
    for m in _K3_CALL.finditer(body):
        name = m.group(1).strip()
        if _never_closed(body, "<|close|>call<|sep|>", m.start(), closed):
            items.append(_cut_off(name))
            continue
        args: dict[str, Any] = {}
        inner = m.group(2)
        whole = _K3_JSON.match(inner.strip())
        if whole:
            value = typed_value(whole.group(1), {"type": "object"})
            items.append((name, value if isinstance(value, dict) else {}))
            continue
        for a in _K3_ARG.finditer(inner):
            key, kind, raw = a.group(1), a.group(2), a.group(3)
            schema = {"type": kind} if kind else None
            args[key] = (
                typed_value(raw, schema)
                if schema
                else typed_arguments(name, [(key, raw)], schemas)[key]
            )
        items.append((name, args))
    return items


# MiniCPM5: <function name="N"><param name="K">V</param></function>, CDATA for odd text.
def _cdata(value: str) -> str:
    s = value.strip()
    if s.startswith("<![CDATA[") and s.endswith("]]>"):
        return s[len("<![CDATA[") : -len("]]>")]
    return value


minicpm5_xml = xml_family(
    r'<function name="([^"]*)">(.*?)(?:</function>|\Z)',
    r'<param name="([^"]*)">(.*?)(?:</param>|\Z)',
    call_end="</function>",
    value=_cdata,
)
# Muse: <atem:invoke name="N"><atem:parameter name="K">V</atem:parameter></atem:invoke>
muse_atem = xml_family(
    r'<atem:invoke name="([^"]*)">(.*?)(?:</atem:invoke>|\Z)',
    r'<atem:parameter name="([^"]*)">(.*?)(?:</atem:parameter>|\Z)',
    call_end="</atem:invoke>",
)


# --- Gemma 4: call:NAME{key:<|"|>text<|"|>,n:1,flag:true,obj:{…},list:[…]} ---------------------

_QUOTE = '<|"|>'


class _Gemma:
    def __init__(self, text: str) -> None:
        self.s, self.i = text, 0

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def value(self) -> Any:
        self.ws()
        s = self.s
        if s.startswith(_QUOTE, self.i):
            end = s.find(_QUOTE, self.i + len(_QUOTE))
            if end < 0:
                raise ValueError("unterminated string")
            out = s[self.i + len(_QUOTE) : end]
            self.i = end + len(_QUOTE)
            return out
        if self.i < len(s) and s[self.i] == "{":
            return self.obj()
        if self.i < len(s) and s[self.i] == "[":
            self.i += 1
            items: list[Any] = []
            self.ws()
            while self.i < len(s) and s[self.i] != "]":
                at = self.i
                items.append(self.value())
                self.ws()
                if self.i < len(s) and s[self.i] == ",":
                    self.i += 1
                elif self.i == at:  # "[1}": nothing a list item can be; never spin here
                    raise ValueError(f"unexpected {s[self.i]!r} in a list")
            self.i += 1
            return items
        m = re.compile(r"[^,}\]]*").match(s, self.i)
        assert m is not None
        self.i = m.end()
        return typed_value(m.group().strip(), None)

    def obj(self) -> dict[str, Any]:
        s = self.s
        if s[self.i] != "{":
            raise ValueError("expected {")
        self.i += 1
        out: dict[str, Any] = {}
        while True:
            self.ws()
            if self.i >= len(s):
                raise ValueError("unterminated object")
            if s[self.i] == "}":
                self.i += 1
                return out
            colon = s.find(":", self.i)
            if colon < 0:
                raise ValueError("a key without a value")
            key = s[self.i : colon].strip().strip('"')
            self.i = colon + 1
            out[key] = self.value()
            self.ws()
            if self.i < len(s) and s[self.i] == ",":
                self.i += 1


def gemma4(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    text = body.strip()
    if not text.startswith("call:"):
        return ["your tool call must start with call:NAME{…}"]
    brace = text.find("{")
    name = text[len("call:") : brace if brace >= 0 else len(text)].strip()
    if brace < 0:
        return [_cut_off(name) if not closed else f"your call to {name} has no {{arguments}}"]
    try:
        return [(name, _Gemma(text[brace:]).obj())]
    except (ValueError, IndexError, RecursionError) as exc:
        return [_cut_off(name) if not closed else f"the arguments of {name} are malformed: {exc}"]
