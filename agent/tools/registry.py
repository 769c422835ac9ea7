"""Tools are typed Python functions; their JSON schema comes from the signature.

A tool's name is its function name, its description the docstring's first paragraph.
Arguments are validated against the schema before the call, so a model's mistake comes
back to it as a precise error ToolResult instead of a Python TypeError (in bounded time,
whatever an MCP server's schema holds: `agent.tools.validation`).
"""

from __future__ import annotations

import inspect
import threading
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agent.errors import ToolError
from agent.history import ToolCall, ToolResult
from agent.tools.validation import argument_problem

NO_CHANGES = "(no changes)"  # the preview of a call that would leave its file as it is

if TYPE_CHECKING:
    from agent.events import AgentEvent
    from agent.tools.sandbox import SandboxPolicy

# "mcp": a tool of an MCP server, which may do anything; "mcp-trusted": one of a server
# the user's own config marked `trusted`.
ToolKind = Literal["read", "write", "shell", "mcp", "mcp-trusted"]


class Editor(Protocol):
    """An editor that holds the workspace's files (an ACP client's `fs` methods): what
    it shows, unsaved changes included, is the file a person is looking at, so the file
    tools read and write through it. Paths reach it already confined to the workspace."""

    def read_text(self, path: Path) -> str | None:
        """The editor's text of this file; None: it has none, the disk's stands."""
        ...

    def write_text(self, path: Path, text: str) -> bool:
        """Write the file through the editor; False: it does not write, the disk it is
        (a failure the model should hear of raises ToolError)."""
        ...


@dataclass(frozen=True)
class ToolContext:
    """What every tool gets besides its arguments."""

    workspace: Path
    sandbox: SandboxPolicy | None = None  # bash runs in bubblewrap under this policy
    editor: Editor | None = None  # file text through an editor's buffers (ACP); None: disk
    # Set when the request is to stop (the run's Cancel): a running command is killed at
    # once, whichever thread runs the tool; a signal reaches only the main thread.
    stop: threading.Event | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., str]
    kind: ToolKind
    # What the call would change, shown before asking (a unified diff for file edits);
    # same signature as `func`, must not change anything.
    preview: Callable[..., str] | None = None
    # The workspace paths a call would write, from its arguments: what the checkpoints
    # save first and the .git/ check looks at. None: its arguments named "*path*".
    paths: Callable[[dict[str, Any]], list[str]] | None = None
    # The event a call that succeeded reports to whoever watches (update_plan's `plan`
    # event): the loop emits it after the call's result; None: the result says it all.
    reports: Callable[[dict[str, Any]], AgentEvent | None] | None = None
    # The arguments' shape in one line, added to a schema error so a small model sees
    # what to send instead of only what was wrong ("" for none).
    shape: str = ""

    def written_paths(self, arguments: dict[str, Any]) -> list[str]:
        """The paths a call with these arguments would write (never raises)."""
        if self.paths is not None:
            try:
                return [p for p in self.paths(arguments) if isinstance(p, str)]
            except Exception:  # a malformed call writes nothing: it fails on its own
                return []
        return [v for k, v in arguments.items() if "path" in k and isinstance(v, str)]

    def spec(self) -> dict[str, Any]:
        """OpenAI-style tool definition, as chat templates and servers expect."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


_JSON_TYPES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
}


def _schema_for(annotation: Any) -> dict[str, Any]:
    if annotation in _JSON_TYPES:
        return dict(_JSON_TYPES[annotation])
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _schema_for(rest[0])
    if origin is list and len(args) == 1:
        return {"type": "array", "items": _schema_for(args[0])}
    if origin is Literal:
        return {"type": "string", "enum": list(args)}
    raise TypeError(f"unsupported tool parameter type: {annotation!r}")


def _param_docs(doc: str) -> dict[str, str]:
    """Parameter descriptions from an "Args:" section (Google style)."""
    out: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:"):
            in_args = True
            continue
        if in_args:
            if not stripped:
                break
            name, sep, text = stripped.partition(":")
            if sep and name.isidentifier():
                out[name] = text.strip()
    return out


def tool(
    kind: ToolKind,
    *,
    preview: Callable[..., str] | None = None,
    paths: Callable[[dict[str, Any]], list[str]] | None = None,
) -> Callable[[Callable[..., str]], Tool]:
    """Declare a tool. The function's first parameter is the ToolContext."""

    def wrap(func: Callable[..., str]) -> Tool:
        doc = inspect.getdoc(func) or ""
        hints = typing.get_type_hints(func)
        params = list(inspect.signature(func).parameters.values())[1:]
        docs = _param_docs(doc)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for p in params:
            schema = _schema_for(hints[p.name])
            if p.name in docs:
                schema["description"] = docs[p.name]
            properties[p.name] = schema
            if p.default is inspect.Parameter.empty:
                required.append(p.name)
        parameters = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        description = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
        return Tool(func.__name__, description, parameters, func, kind, preview, paths)

    return wrap


def _arguments(t: Tool, call: ToolCall) -> dict[str, Any]:
    """The call's arguments with integral floats (2.0) as ints: JSON Schema counts 2.0 as
    an integer, Python slicing does not."""
    props = t.parameters.get("properties", {})
    return {
        k: int(v)
        if isinstance(v, float) and v.is_integer() and props.get(k, {}).get("type") == "integer"
        else v
        for k, v in call.arguments.items()
    }


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools = {t.name: t for t in tools}

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self._tools.values()]

    def validate(self, call: ToolCall) -> str | None:
        """None when the call may run; otherwise the error to send back to the model."""
        t = self._tools.get(call.name)
        if t is None:
            return f"unknown tool {call.name!r}; available tools: {', '.join(self._tools)}"
        problem = argument_problem(call.arguments, t.parameters)
        if problem is None:
            return None
        expected = f"; expected {t.shape}" if t.shape else ""
        return f"invalid arguments for {call.name}: {problem}{expected}"

    def preview(self, call: ToolCall, ctx: ToolContext) -> str | None:
        """What `call` would change, for an approval prompt; None when there is nothing
        to show. Never raises for the model's mistakes: those are the preview."""
        t = self._tools.get(call.name)
        if t is None or t.preview is None or self.validate(call) is not None:
            return None
        try:
            return t.preview(ctx, **_arguments(t, call))
        except ToolError as exc:
            return f"(this call would fail: {exc})"
        except (OSError, UnicodeError) as exc:
            return f"(this call would fail: {exc})"

    def futile(self, call: ToolCall, ctx: ToolContext) -> str | None:
        """Why `call` is already known to fail or to change nothing (its preview says so),
        as the result the model gets; None when it may do something. Asking the user
        about such a call would be a question whose answer cannot matter."""
        t = self._tools.get(call.name)
        if t is None or t.preview is None or self.validate(call) is not None:
            return None
        try:
            shown = t.preview(ctx, **_arguments(t, call))
        except (ToolError, OSError, UnicodeError) as exc:
            return f"Error: {exc}"
        if shown == NO_CHANGES:
            return f"Error: not run; {call.name} would leave the file exactly as it is"
        return None

    def reported(self, call: ToolCall, result: ToolResult) -> AgentEvent | None:
        """What a call that succeeded reports besides its result (`Tool.reports`)."""
        t = self._tools.get(call.name)
        if result.is_error or t is None or t.reports is None:
            return None
        return t.reports(call.arguments)

    def execute(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        """Run a validated call. Model-caused failures become error results."""
        problem = self.validate(call)
        if problem is not None:
            return ToolResult(call.id, f"Error: {problem}", is_error=True)
        t = self._tools[call.name]
        try:
            return ToolResult(call.id, t.func(ctx, **_arguments(t, call)))
        except ToolError as exc:
            return ToolResult(call.id, f"Error: {exc}", is_error=True)
        except OSError as exc:
            where = f"{exc.filename}: " if isinstance(exc.filename, str) else ""
            return ToolResult(call.id, f"Error: {where}{exc.strerror or exc}", is_error=True)
        except UnicodeError as exc:  # JSON can carry lone surrogates no file or argv can hold
            return ToolResult(call.id, f"Error: text that cannot be encoded: {exc}", True)
