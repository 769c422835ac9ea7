"""bosun's events and messages in ACP's words: `session/update` payloads.

One place maps both what happens live (an `AgentEvent`) and what a loaded session
replays (its stored messages), so an editor shows a resumed conversation the way it
showed it when it ran. A tool call's kind, title, locations and, for the two file
edits, its diff (old and new text, as the editor renders it) are worked out here from
the call's arguments and the tool's kind; nothing here changes a file.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from acp import schema as s
from acp.helpers import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)

from agent import events as ev
from agent.errors import ToolError
from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    Reasoning,
    ToolCall,
    ToolResult,
    User,
)
from agent.tools import ToolContext, ToolRegistry
from agent.tools.confine import resolve_in_workspace
from agent.tools.edit import planned_change

Update = Any  # one of the SDK's session-update models
MAX_RESULT_CHARS = 4000  # a tool's output as the editor shows it; the model gets it all
MAX_TITLE_CHARS = 80

# ACP's kinds by tool: how an editor picks an icon and groups calls
KINDS: dict[str, str] = {
    "read_file": "read",
    "list_dir": "read",
    "glob": "search",
    "grep": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "apply_patch": "edit",
    "bash": "execute",
    "update_plan": "think",
    "skill": "read",
}
BY_TOOL_KIND = {"read": "read", "write": "edit", "shell": "execute"}


def kind_of(call: ToolCall, tools: ToolRegistry) -> str:
    if call.name in KINDS:
        return KINDS[call.name]
    tool = tools.get(call.name)
    return BY_TOOL_KIND.get(tool.kind, "other") if tool is not None else "other"


def title_of(call: ToolCall) -> str:
    """What the call does, in one short line: the tool and its main argument."""
    args = call.arguments
    main = next(
        (args[k] for k in ("command", "path", "pattern", "name") if isinstance(args.get(k), str)),
        "",
    )
    line = " ".join(f"{call.name} {main}".split())
    return line if len(line) <= MAX_TITLE_CHARS else line[: MAX_TITLE_CHARS - 1] + "…"


def locations_of(call: ToolCall, tools: ToolRegistry, workspace: Path) -> list[s.ToolCallLocation]:
    """The workspace files a call reads or writes, as absolute paths (ACP's form);
    a path outside the workspace is left out: the call will be refused anyway."""
    tool = tools.get(call.name)
    if tool is None:
        return []
    paths = tool.written_paths(call.arguments)
    if not paths and tool.kind == "read" and isinstance(call.arguments.get("path"), str):
        paths = [call.arguments["path"]]
    found = []
    for path in paths:
        try:
            found.append(s.ToolCallLocation(path=str(resolve_in_workspace(workspace, path))))
        except ToolError:
            continue
    return found


def diff_of(call: ToolCall, ctx: ToolContext) -> list[Any]:
    """The edit a write_file/edit_file call would make, as ACP's diff content."""
    change = planned_change(ctx, call.name, call.arguments)
    if change is None:
        return []
    try:
        path = resolve_in_workspace(ctx.workspace, str(call.arguments["path"]))
    except ToolError:
        return []
    return [tool_diff_content(str(path), change.after, change.before)]


def started(call: ToolCall, tools: ToolRegistry, ctx: ToolContext) -> Update:
    shown = diff_of(call, ctx)  # the edit, before it is made
    return start_tool_call(
        call.id,
        title_of(call),
        kind=kind_of(call, tools),  # type: ignore[arg-type]
        status="pending",
        content=shown or None,
        locations=locations_of(call, tools, ctx.workspace) or None,
        raw_input=call.arguments,
    )


def asked(call: ToolCall, tools: ToolRegistry, ctx: ToolContext) -> s.ToolCallUpdate:
    """The call as a permission request names it (the diff again: the question's own)."""
    return s.ToolCallUpdate(
        tool_call_id=call.id,
        title=title_of(call),
        kind=kind_of(call, tools),  # type: ignore[arg-type]
        status="pending",
        content=diff_of(call, ctx) or None,
        locations=locations_of(call, tools, ctx.workspace) or None,
        raw_input=call.arguments,
    )


def finished(call_id: str, is_error: bool, content: str, diff: list[Any] = ()) -> Update:  # type: ignore[assignment]
    shown = content if len(content) <= MAX_RESULT_CHARS else content[:MAX_RESULT_CHARS] + " …"
    blocks = [*([] if is_error else diff), tool_content(text_block(shown))]
    return update_tool_call(
        call_id,
        status="failed" if is_error else "completed",
        content=blocks,
        raw_output=content if len(content) <= MAX_RESULT_CHARS else None,
    )


def plan_of(event: ev.PlanUpdated) -> Update:
    return update_plan(
        plan_entry(step["step"], priority="medium", status=step["status"])  # type: ignore[arg-type]
        for step in event.steps
    )


def of_event(event: ev.AgentEvent) -> Update | None:
    """The update for an event that is not a tool call's (those need the session's
    tools and workspace: `started`/`finished`); None for one an editor has no use for."""
    if isinstance(event, ev.TextDelta):
        return update_agent_message_text(event.text) if event.text else None
    if isinstance(event, ev.ReasoningDelta):
        return update_agent_thought_text(event.text) if event.text else None
    if isinstance(event, ev.PlanUpdated):
        return plan_of(event)
    if isinstance(event, ev.ReplyProblem):
        return update_agent_thought_text(f"\n[bosun] {event.for_person()}\n")
    if isinstance(event, ev.Diagnostic):
        return update_agent_thought_text(f"\n[bosun] {event.message}\n")
    if isinstance(event, ev.Compaction | ev.LintRun | ev.TestRun):
        return update_agent_thought_text(f"\n[bosun] {event.line()}\n")
    return None


def replay(messages: Iterable[Message], tools: ToolRegistry, ctx: ToolContext) -> list[Update]:
    """A stored conversation as the updates that showed it (`session/load`). Diffs are
    not replayed: the files have changed since, so a diff worked out now would lie."""
    updates: list[Update] = []
    for message in messages:
        if isinstance(message, User):
            updates.append(update_user_message_text(message.content))
        elif isinstance(message, Assistant):
            updates.append(update_agent_message_text(message.content))
        elif isinstance(message, Reasoning):
            updates.append(update_agent_thought_text(message.content))
        elif isinstance(message, AssistantToolUse):
            call = message.call
            updates.append(
                start_tool_call(
                    call.id,
                    title_of(call),
                    kind=kind_of(call, tools),  # type: ignore[arg-type]
                    status="pending",
                    locations=locations_of(call, tools, ctx.workspace) or None,
                    raw_input=call.arguments,
                )
            )
        elif isinstance(message, ToolResult):
            updates.append(finished(message.call_id, message.is_error, message.content))
    return updates
