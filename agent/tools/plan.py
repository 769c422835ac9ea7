"""`update_plan`: the model's checklist for a longer task, in Codex's shape.

The tool changes nothing and tells the model nothing new ("Plan updated"): its value is
its arguments, which the user sees as a checklist and the session file keeps (a `plan`
event), so a long request shows where it stands and a resumed one where it stood. The
whole plan is sent each time, never a diff, so any one event says everything and a
small model cannot drift out of step with a list it would otherwise have to remember.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.events import PlanUpdated
from agent.tools.registry import Tool, ToolContext, ToolError

STATUSES = ("pending", "in_progress", "completed")
MAX_STEPS = 50  # a plan longer than this is no longer a checklist anyone reads
MAX_STEP_CHARS = 500
MAX_EXPLANATION_CHARS = 2000
SHAPE = (
    '{"explanation"?: string, "plan": [{"step": string, "status":'
    ' "pending" | "in_progress" | "completed"}, ...]}'
)
DONE = "Plan updated"


@dataclass(frozen=True)
class Step:
    step: str
    status: str


def plan_problem(plan: Any, explanation: Any = "") -> str | None:
    """What makes this plan unusable, in words the model can act on; None when none.
    Checked here as well as by the schema: MCP-style callers and a resumed session's
    records skip the schema, and the bounds are not in it (they would cost prompt)."""
    if not isinstance(explanation, str):
        return "explanation must be a string"
    if len(explanation) > MAX_EXPLANATION_CHARS:
        n = len(explanation)
        return f"explanation is {n} characters; keep it under {MAX_EXPLANATION_CHARS}"
    if not isinstance(plan, list):
        return f"plan must be a list of steps, not {type(plan).__name__}"
    if len(plan) > MAX_STEPS:
        return f"plan has {len(plan)} steps; at most {MAX_STEPS}: merge small ones"
    running = 0
    for n, item in enumerate(plan, 1):
        if not isinstance(item, dict) or set(item) != {"step", "status"}:
            return f"step {n} must be an object with exactly the keys step and status"
        text, status = item["step"], item["status"]
        if not isinstance(text, str) or not text.strip():
            return f"step {n}: step must be a non-empty string"
        if len(text) > MAX_STEP_CHARS:
            return f"step {n} is {len(text)} characters; keep a step under {MAX_STEP_CHARS}"
        if status not in STATUSES:
            return f"step {n}: status {str(status)[:40]!r} is not one of {', '.join(STATUSES)}"
        running += status == "in_progress"
    if running > 1:
        return f"{running} steps are in_progress; at most one may be (mark the others pending)"
    return None


def steps_of(plan: list[dict[str, Any]]) -> tuple[Step, ...]:
    """A checked plan's steps, one line each (a newline in a step would break a list)."""
    return tuple(Step(" ".join(str(i["step"]).split()), str(i["status"])) for i in plan)


def plan_event(arguments: dict[str, Any]) -> PlanUpdated | None:
    """The `plan` event for a call that succeeded (None for one that would not)."""
    plan, explanation = arguments.get("plan"), arguments.get("explanation", "")
    if plan_problem(plan, explanation) is not None:
        return None
    steps = [{"step": s.step, "status": s.status} for s in steps_of(plan)]
    return PlanUpdated(explanation=explanation.strip(), steps=steps)


def plan_from_record(record: dict[str, Any] | None) -> PlanUpdated | None:
    """A session file's `plan` record back as the event, or None if it is not a valid
    one (a session file is untrusted: it may have been edited by hand)."""
    if not isinstance(record, dict):
        return None
    steps, explanation = record.get("steps"), record.get("explanation", "")
    if plan_problem(steps, explanation) is not None:
        return None
    return plan_event({"plan": steps, "explanation": explanation})


def _update_plan(ctx: ToolContext, plan: Any, explanation: str = "") -> str:
    problem = plan_problem(plan, explanation)
    if problem is not None:
        raise ToolError(f"{problem}; expected {SHAPE}")
    return DONE


_STEP = {
    "type": "object",
    "properties": {
        "step": {"type": "string"},
        "status": {"type": "string", "enum": list(STATUSES)},
    },
    "required": ["step", "status"],
    "additionalProperties": False,
}

update_plan = Tool(
    name="update_plan",
    description=(
        "Record your plan for a task of several steps, as a checklist the user sees."
        " Send the whole list each time: mark a step in_progress when you start it and"
        " completed when it is done; at most one step is in_progress at a time."
    ),
    parameters={
        "type": "object",
        "properties": {
            "explanation": {"type": "string", "description": "why the plan changed (optional)"},
            "plan": {"type": "array", "description": "the steps, in order", "items": _STEP},
        },
        "required": ["plan"],
        "additionalProperties": False,
    },
    func=_update_plan,
    kind="read",  # changes nothing: never asks, runs in read-only mode too
    paths=lambda _arguments: [],
    reports=plan_event,
    shape=SHAPE,
)


# -- how a plan reads on a screen (the chat, and a headless run's stderr) --------------

MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☑"}
ASCII_MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}


def unicode_ok(encoding: str | None) -> bool:
    """Whether a stream of this encoding shows the check boxes (a C-locale terminal or
    a pipe into a legacy code page shows ASCII ones instead of '?')."""
    return (encoding or "").lower().replace("-", "").startswith("utf")


def checklist(plan: PlanUpdated, unicode: bool = True) -> list[tuple[str, str]]:
    """(status, "☐ step") per step, in order; the caller escapes the text (model text)."""
    marks = MARKS if unicode else ASCII_MARKS
    return [(s["status"], f"{marks.get(s['status'], '?')} {s['step']}") for s in plan.steps]


def progress(plan: PlanUpdated, unicode: bool = True) -> str:
    """'plan 2/5 · the step in progress', for a status line; '' for an empty plan."""
    if not plan.steps:
        return ""
    done = sum(s["status"] == "completed" for s in plan.steps)
    now = next((s["step"] for s in plan.steps if s["status"] == "in_progress"), "")
    return f"plan {done}/{len(plan.steps)}" + (f" {'·' if unicode else '-'} {now}" if now else "")
