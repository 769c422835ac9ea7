"""One tool call, start to end: PreToolUse hooks -> approve -> checkpoint -> execute ->
PostToolUse hooks.

The registry knows the tools, `permissions` decides whether a call may run, the
checkpoints keep what a write would change; this is the one place that strings them
together, so the loop only counts what happened (the `Outcome`) and never decides it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.history import ToolCall, ToolResult
from agent.tools.checkpoints import Checkpoints
from agent.tools.patch import routed
from agent.tools.permissions import DECLINED, Approver, policy_refused, refusal
from agent.tools.registry import Editor, ToolContext, ToolRegistry

if TYPE_CHECKING:
    from agent.tools.hooks import Hooks, Verdict
    from agent.tools.sandbox import SandboxPolicy

INTERRUPTED_CALL = "Error: the user interrupted before this call ran"
STOPPED_CALL = "Error: the user interrupted this call while it ran; its effect may be partial"
HOOK_BLOCKED = "Error: not run; a PreToolUse hook blocked this call: "


@dataclass(frozen=True)
class Outcome:
    """What became of one call: its result, and how it got there."""

    result: ToolResult
    ran: bool = False  # approved and executed
    declined: bool = False  # the user said no: the request ends after this reply
    redirected: bool = False  # no, with what to do instead: the model goes on with that
    refused: bool = False  # the approval mode (or nobody to ask) kept it from running
    interrupted: bool = False  # Ctrl-C at the question or while the tool ran

    @property
    def decision(self) -> str:
        """What the gate made of the call, in one word (a tool_result's `decision`)."""
        if self.ran:
            return "allowed"
        if self.declined or self.redirected:
            return "declined"
        if self.refused:
            return "refused"
        if self.interrupted:
            return "not_run"
        return "blocked"  # by a PreToolUse hook


@dataclass
class Gate:
    """The approval state of a session: the mode, who to ask, and the tools the user
    answered "always" for (forgotten whenever the mode or the sandbox changes)."""

    approve: str = "auto"
    approver: Approver | None = None  # None: nobody to ask (headless)
    sandbox: SandboxPolicy | None = None  # bash in bubblewrap; None: as the user
    always: set[str] | None = None
    hooks: Hooks | None = None  # the session's hooks (PreToolUse, PostToolUse, …)
    editor: Editor | None = None  # file text through an editor's buffers (ACP)

    def __post_init__(self) -> None:
        if self.always is None:
            self.always = set()

    def reset(self) -> None:
        assert self.always is not None
        self.always.clear()


def run_call(
    call: ToolCall,
    tools: ToolRegistry,
    workspace: Path,
    gate: Gate,
    checkpoints: Checkpoints | None = None,
    running: Callable[[], AbstractContextManager[object]] = nullcontext,
    stop: threading.Event | None = None,
) -> Outcome:
    """Ask (where the mode says to), keep what a write would change, then run the tool.
    `running` wraps the execution (the loop makes Ctrl-C stop the tool at once there);
    `stop` is the run's Cancel, watched by a running command from any thread.
    A bash call that only runs `apply_patch` goes to that tool (`agent.tools.patch`)."""
    call = routed(call, tools)
    tool = tools.get(call.name)
    refused: str | None = None
    hooks = gate.hooks if tool is not None else None
    before: Verdict | None = None
    try:
        before = hooks.before_tool(call) if hooks is not None else None
        if before is not None and before.blocked:  # before approval: never asked, never run
            return Outcome(ToolResult(call.id, f"{HOOK_BLOCKED}{before.reason}", True))
        if tool is not None:
            assert gate.always is not None
            sandboxed = gate.sandbox is not None
            ctx = ToolContext(workspace, gate.sandbox, gate.editor, stop)
            refused = refusal(
                gate.approve,
                gate.approver,
                gate.always,
                call,
                tool,
                workspace,
                sandboxed,
                futile=lambda: tools.futile(call, ctx),
            )
    except KeyboardInterrupt:  # Ctrl-C at the question: no, and stop this request
        return Outcome(ToolResult(call.id, INTERRUPTED_CALL, True), interrupted=True)
    if refused is not None:
        return Outcome(
            ToolResult(call.id, refused, is_error=True),
            declined=refused == DECLINED,
            redirected=refused.startswith(DECLINED) and refused != DECLINED,
            refused=policy_refused(refused),
        )
    recording = ExitStack()
    if checkpoints is not None and tool is not None and tool.kind == "write":
        for path in tool.written_paths(call.arguments):  # every file of a patch
            recording.enter_context(checkpoints.recording(path))  # before, and after
    try:
        with recording, running():
            result = tools.execute(call, ToolContext(workspace, gate.sandbox, gate.editor, stop))
    except KeyboardInterrupt:  # the shell tool has killed its command by now
        return Outcome(ToolResult(call.id, STOPPED_CALL, True), ran=True, interrupted=True)
    if hooks is not None and before is not None:
        try:
            result = hooks.after_tool(call, result, before)
        except KeyboardInterrupt:  # the hook is killed; the tool's own result stands
            return Outcome(result, ran=True, interrupted=True)
    return Outcome(result, ran=True)
