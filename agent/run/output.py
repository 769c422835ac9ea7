"""Headless renderings of agent events: JSONL for scripts, plain text for people.

Text mode keeps stdout for the answer alone (so `bosun run … > answer.txt` works) and
reports tool activity on stderr.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from agent import events as ev
from agent.events import Status
from agent.tools.plan import checklist, progress, unicode_ok
from agent.untrusted import json_line, visible


class JsonlPrinter:
    def __init__(self, out: TextIO | None = None, extra: dict[str, Any] | None = None) -> None:
        self.out = out or sys.stdout
        self.extra = extra or {}

    def __call__(self, event: ev.AgentEvent) -> None:
        if event.transient:
            return
        data = event.to_dict()
        data.update(self.extra)
        self.out.write(json_line(data) + "\n")
        self.out.flush()


SHORT = 60  # characters of an argument on a tool call's line


def _short(value: Any, limit: int = SHORT) -> str:
    text = json_line(value) if not isinstance(value, str) else repr(value)
    return visible(text if len(text) <= limit else text[: limit - 1] + "…")


class TextPrinter:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._open_line = False

    def _end_text(self) -> None:
        if self._open_line:
            self.out.write("\n")
            self.out.flush()
            self._open_line = False

    def __call__(self, event: ev.AgentEvent) -> None:
        if isinstance(event, ev.TextDelta):
            self.out.write(visible(event.text))
            self.out.flush()
            self._open_line = not event.text.endswith("\n")
            return
        if event.transient:
            return
        self._end_text()
        if isinstance(event, ev.ToolCallEvent):
            args = ", ".join(f"{k}={_short(v)}" for k, v in event.arguments.items())
            note = " (salvaged)" if event.salvaged else ""
            self.err.write(f"→ {visible(event.name)}({args}){note}\n")
        elif isinstance(event, ev.ToolResultEvent):
            lines = event.content.count("\n") + 1 if event.content else 0
            if event.is_error:
                first = event.content.splitlines()[0] if event.content else ""
                self.err.write(f"  ✗ {visible(first)}\n")
            else:
                self.err.write(f"  ✓ {lines} line{'s' if lines != 1 else ''}\n")
        elif isinstance(event, ev.Diagnostic):
            said = event.for_person() if isinstance(event, ev.ReplyProblem) else event.message
            self.err.write(f"  ! {visible(said)}\n")
        elif isinstance(event, ev.Compaction):
            self.err.write(f"  · {event.line()}\n")
        elif isinstance(event, ev.LintRun | ev.TestRun):
            self.err.write(f"  {'·' if event.ok else '!'} {visible(event.line())}\n")
        elif isinstance(event, ev.PlanUpdated):
            utf = unicode_ok(getattr(self.err, "encoding", ""))
            self.err.write(f"  {visible(progress(event, utf) or 'plan (empty)')}\n")
            for _status, line in checklist(event, utf):
                self.err.write(f"    {visible(line)}\n")
        elif isinstance(event, ev.RunFinished) and event.status != Status.DONE:
            why = visible(event.error or "")
            self.err.write(f"bosun: stopped ({event.status})" + (f": {why}" if why else "") + "\n")
        self.err.flush()
