"""Agent events on a terminal: streamed Markdown, reasoning, tool panels, diffs.

Streaming uses a small `rich.Live` region for the block still being written and prints
each finished block once, for good. Re-rendering the whole answer in one Live region
would break as soon as it grows taller than the screen (and costs O(n^2)); a finished
block never changes, so it can leave the live region and become ordinary scrollback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.panel import Panel
from rich.segment import Segment
from rich.text import Text

from agent import events as ev
from agent.events import Status
from agent.tools.shell import command_failed
from agent.ui.diff import diff_text
from agent.ui.footer import Footer
from agent.ui.plan import plan_text
from agent.untrusted import fold, json_line, one_line, visible

REFRESH_S = 1 / 15
RESULT_PREVIEW_LINES = 3
PLAN_TOOL = "update_plan"  # shown by its `plan` event, not as a tool panel
Preview = Callable[[str, dict[str, Any]], str | None]


def cell(value: str) -> Text:
    """A table cell of text from outside (a prompt, an MCP server's description): as
    plain text, since rich would read `[/x]` in a str cell as markup and raise."""
    return Text(visible(value))


def stable_cut(text: str) -> int:
    """Where the finished part of streamed Markdown ends: after the last blank line
    outside a code fence. Everything before it renders the same whatever comes next."""
    cut = pos = 0
    fence = ""
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # the line is still being written
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = ""
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif not stripped:
            cut = pos + len(line)
        pos += len(line)
    return cut


class Tail:
    """The last `height` lines of a renderable: the live region must stay shorter than
    the screen, or the terminal scrolls and Live can no longer redraw in place."""

    def __init__(self, renderable: RenderableType, height: int) -> None:
        self.renderable = renderable
        self.height = max(1, height)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.renderable, options, pad=False)
        for line in lines[-self.height :]:
            yield from line
            yield Segment.line()


def _one_line(value: Any, width: int, diff_shown: bool) -> str:
    """An argument on one row; a string of several lines a diff shows (a file's new
    text) as its size. Any other keeps its start and its end: a command is read whole
    before the question, even one that only starts or ends with a newline."""
    if isinstance(value, str) and "\n" in value and diff_shown:
        n = value.count("\n") + (0 if value.endswith("\n") else 1)
        return f"({n} lines, {len(value.encode('utf-8', 'replace'))} bytes)"
    return one_line(value if isinstance(value, str) else json_line(value), width)


def _size(text: str) -> str:
    n = len(text.encode())
    return f"{n} bytes" if n < 10_000 else f"{n / 1024:.1f} KiB"


class Renderer:
    """Consumes agent events (the `emit` callback) and draws them."""

    def __init__(self, console: Console, preview: Preview, show_reasoning: bool = False) -> None:
        self.console = console
        self.preview = preview
        self.show_reasoning = show_reasoning
        self.stop_requested: Callable[[], bool] = lambda: False  # the REPL's Cancel
        self.last_reasoning = ""
        self._kind = ""  # "text" or "reasoning": the block being streamed
        self._buffer = ""
        self._reasoning: list[str] = []
        self._live: Live | None = None
        self._drawn = 0.0
        self._names: dict[str, str] = {}  # call id -> tool name, for its result
        # under the live region: set `footer.status` / `footer.typed` to show those too
        self.footer = Footer(lambda: self.stop_requested())

    # --- streaming -----------------------------------------------------------------

    def _live_region(self) -> Live:
        if self._live is None:
            self._live = Live(
                console=self.console, auto_refresh=False, transient=True, redirect_stdout=False
            )
            self._live.start()
        return self._live

    def _block(self, text: str) -> RenderableType:
        text = visible(text)  # model text: no escape sequence reaches the terminal
        if self._kind == "reasoning":
            return Text(text, style="dim italic")
        return Markdown(text)

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn < REFRESH_S:
            return
        self._drawn = now
        height = max(3, self.console.height - 4 - self.footer.lines())
        shown = Group(Tail(self._block(self._buffer), height), self.footer)
        self._live_region().update(shown, refresh=True)

    def _stream(self, kind: str, text: str) -> None:
        self.footer.streamed()
        if kind != self._kind:
            self.finish_stream()
            self._kind = kind
        if kind == "reasoning":
            self._reasoning.append(text)
            if not self.show_reasoning:
                return
        self._buffer += text
        cut = stable_cut(self._buffer)
        if cut:
            done, self._buffer = self._buffer[:cut], self._buffer[cut:]
            self._stop_live()
            self.console.print(self._block(done.rstrip("\n")))
        if self._buffer.strip():
            self._draw()

    def waiting(self) -> None:
        """A spinner until the model's next output: evaluating a long prompt on a CPU
        can take many seconds, and a silent screen looks like a hang. It says
        "stopping…" once a stop was asked for (`stop_requested`, read at each refresh:
        the Ctrl-C handler itself draws nothing)."""
        if self._live is None:
            self._live = Live(
                self.footer,
                console=self.console,
                transient=True,
                refresh_per_second=8,
            )
            self._live.start()

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
            self._drawn = 0.0

    def finish_stream(self) -> None:
        """Print what is still live, for good; called before anything else is drawn."""
        self._stop_live()
        if self._buffer.strip():
            self.console.print(self._block(self._buffer.strip("\n")))
        if self._kind == "reasoning":
            self.last_reasoning = "".join(self._reasoning)
            if not self.show_reasoning and self.last_reasoning.strip():
                words = len(self.last_reasoning.split())
                self.console.print(
                    Text(f"▸ reasoning, {words} words (/reasoning shows it)", style="dim")
                )
            self._reasoning = []
        self._buffer, self._kind = "", ""

    # --- everything else -----------------------------------------------------------

    def __call__(self, event: ev.AgentEvent) -> None:
        if isinstance(event, ev.TextDelta):
            self._stream("text", event.text)
            return
        if isinstance(event, ev.ReasoningDelta):
            self._stream("reasoning", event.text)
            return
        if isinstance(event, ev.PromptProgress):  # the spinner says it; nothing is printed
            self.footer.read(event.processed, event.total)
            return
        self.finish_stream()
        if isinstance(event, ev.ToolCallEvent):
            self.tool_call(event)
        elif isinstance(event, ev.ToolResultEvent):
            self.tool_result(event)
            self.waiting()  # the model is called again next
        elif isinstance(event, ev.ReplyProblem):
            self.console.print(Text(f"  ! {visible(event.for_person())}", style="yellow"))
        elif isinstance(event, ev.Diagnostic):
            self.console.print(Text(f"  ! {visible(event.message)}", style="yellow"))
        elif isinstance(event, ev.Compaction):
            self.console.print(Text(f"  · {event.line()}", style="dim"))
        elif isinstance(event, ev.LintRun | ev.TestRun):
            mark, style = ("·", "dim") if event.ok else ("!", "yellow")
            self.console.print(Text(f"  {mark} {visible(event.line())}", style=style))
        elif isinstance(event, ev.PlanUpdated):
            self.show_plan(event)
            self.waiting()  # it came after its call's result: the model is called next
        elif isinstance(event, ev.TurnFinished):
            self.footer.turn(event.completion_tokens)
        elif isinstance(event, ev.SessionStarted):
            self.console.print(
                Text(f"session {event.id} · {event.model} · {event.workspace}", style="dim")
            )
        elif isinstance(event, ev.RunFinished) and event.status != Status.DONE:
            why = f": {visible(event.error)}" if event.error else ""
            self.console.print(Text(f"■ stopped ({event.status}){why}", style="yellow"))

    def tool_call(
        self, event: ev.ToolCallEvent, preview: bool = True, running: bool = True
    ) -> None:
        """A compact panel: name, arguments on one line each, the diff it would make
        (not for a replayed call: the file has changed since, the diff would lie); then
        the spinner while the call runs (a question about it stops the spinner first)."""
        self._names[event.id] = event.name
        if event.name == PLAN_TOOL:  # its `plan` event shows it, as a checklist
            if running:
                self.waiting()
            return
        width = max(20, self.console.width - 8)
        body = Text()
        diff = self.preview(event.name, event.arguments) if preview else None
        for i, (key, value) in enumerate(event.arguments.items()):
            body.append(("\n" if i else "") + f"{visible(key)}: ", style="bold")
            if isinstance(value, str) and "\n" in value.strip() and not diff:
                body.append("\n")
                body.append(Text(fold(value, width - 2)))  # as every question folds one
            else:
                body.append(_one_line(value, width - len(key) - 2, bool(diff)))
        title = visible(event.name) + (" (salvaged)" if event.salvaged else "")
        parts: list[RenderableType] = [body] if event.arguments else [Text("(no arguments)")]
        if diff:
            parts.append(diff_text(diff))
        self.console.print(
            Panel(
                Group(*parts),
                title=title,
                title_align="left",
                box=box.ROUNDED,
                expand=False,
                padding=(0, 1),
            )
        )
        if running:
            self.waiting()

    def show_plan(self, plan: ev.PlanUpdated) -> None:
        """The whole checklist, printed again at each update (see agent.ui.plan)."""
        self.console.print(plan_text(plan, self.console))

    def tool_result(self, event: ev.ToolResultEvent) -> None:
        if self._names.get(event.id) == PLAN_TOOL:
            if not event.is_error:
                return  # "Plan updated": the checklist printed next says more
            self.console.print(Text(f"  {PLAN_TOOL} (the plan is unchanged):", style="red"))
        lines = event.content.splitlines()
        failed = event.is_error or (
            self._names.get(event.id) == "bash" and command_failed(event.content)
        )
        style = "red" if failed else "dim"
        mark = "✗" if failed else "✓"
        summary = f"  {mark} {len(lines)} line{'s' if len(lines) != 1 else ''}, "
        self.console.print(Text(summary + _size(event.content), style=style))
        for line in lines[:RESULT_PREVIEW_LINES]:
            shown = "    " + visible(line)
            self.console.print(Text(shown, style=style, no_wrap=True, overflow="ellipsis"))
        if len(lines) > RESULT_PREVIEW_LINES:
            more = len(lines) - RESULT_PREVIEW_LINES
            self.console.print(Text(f"    … {more} more (/result shows all)", style=style))
