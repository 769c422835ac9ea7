"""The model's plan on the screen: a checklist printed where it changed, and its
progress in the footer while the model works.

A printed checklist cannot be redrawn once the answer has scrolled past it (rich's live
region is only the bottom of the screen, and only while the model works), so each
update prints the whole list again, a line a step; what updates in place is the
footer's "plan 2/5 · step in progress" under the spinner.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from agent.events import PlanUpdated
from agent.tools.plan import checklist, progress, unicode_ok
from agent.untrusted import visible

STYLES = {"completed": "dim strike", "in_progress": "bold cyan", "pending": ""}


def plan_text(plan: PlanUpdated, console: Console, title: str = "plan") -> Text:
    """The checklist as rich Text: a title with the count done, the model's explanation
    (dim), one line a step. Step text is model output: escapes are shown, not run."""
    head = progress(plan).split(" · ", 1)[0] or f"{title} (empty)"
    text = Text(("  " + head.replace("plan", title, 1)), style="bold")
    if plan.explanation:
        text.append("\n    " + visible(" ".join(plan.explanation.split())), style="dim italic")
    for status, line in checklist(plan, unicode_ok(console.encoding)):
        text.append("\n    ")
        text.append(visible(line), style=STYLES.get(status, ""))
    return text


def footer_line(plan: PlanUpdated | None) -> str:
    """The footer's plan row ('' when there is no plan, or it has no steps)."""
    return visible(progress(plan)) if plan is not None else ""
