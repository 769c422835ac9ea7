"""Approvals as `session/request_permission`: bosun's approver, answered by the editor.

The approval mode decides as it always does (agent.tools.permissions) whether a call
asks; only the asking moves to the editor. Its three options are bosun's three answers:
allow once ("yes"), allow always ("always": this tool, for the rest of the session or
until the mode changes) and reject ("no": the request ends there, as in chat). An
answer that is none of them, or an editor that cannot answer, is a no; the editor's
"cancelled" is the user's cancel.
"""

from __future__ import annotations

from acp import schema as s
from acp.helpers import update_tool_call

from agent.history import ToolCall
from agent.loop.cancel import Cancel
from agent.run.acp.outbox import Outbox
from agent.run.acp.updates import asked
from agent.tools import Tool, ToolContext, ToolRegistry
from agent.tools.permissions import Approval, Approver

OPTIONS = (
    s.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    s.PermissionOption(option_id="always", name="Always allow this tool", kind="allow_always"),
    s.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
)
ANSWERS: dict[str, Approval] = {"allow": "yes", "always": "always", "reject": "no"}


def editor_approver(
    outbox: Outbox, tools: ToolRegistry, context: ToolContext, cancel: Cancel
) -> Approver:
    def ask(call: ToolCall, tool: Tool) -> Approval:
        request = asked(call, tools, context)
        try:
            response = outbox.ask(
                lambda: outbox.conn.request_permission(
                    session_id=outbox.session_id, tool_call=request, options=list(OPTIONS)
                ),
                cancel,
            )
        except KeyboardInterrupt:
            raise
        except Exception:  # no answer, or not one the protocol allows: nobody said yes
            return "no"
        outcome = response.outcome
        if not isinstance(outcome, s.AllowedOutcome):  # "cancelled": the turn stops
            cancel.set()
            raise KeyboardInterrupt
        answer = ANSWERS.get(outcome.option_id, "no")
        if answer != "no":
            outbox.put(update_tool_call(call.id, status="in_progress"))
        return answer

    return ask
