"""What stays on screen under the answer while the model works, so the screen always
says what is happening: a spinner with the request's seconds and tokens so far
("reading prompt 45%" while a server reports its prefill, "stopping…" once a stop was
asked for), the status bar the prompt shows, and the keys typed ahead for the next
message. Claude Code keeps the same three in view; without them a long prefill looks
like a hang and type-ahead looks lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Group
from rich.spinner import Spinner
from rich.text import Text

from agent.untrusted import visible


class Elapsed:
    """A spinner's text with the seconds since it began (and a detail that can change,
    such as a percentage): a long load visibly moves on, never looks hung."""

    def __init__(self, text: str, detail: str = "") -> None:
        self.text, self.detail = text, detail
        self.start = time.monotonic()

    def set(self, detail: str) -> None:
        self.detail = detail

    def __rich__(self) -> Text:
        seconds = time.monotonic() - self.start
        detail = f" {self.detail}" if self.detail else ""
        return Text(f"{self.text} …{detail} {seconds:.0f} s", style="dim")


class Footer:
    """Redrawn at every refresh of the live region it sits in (`__rich__`)."""

    def __init__(
        self,
        stopping: Callable[[], bool],
        status: Callable[[], str] = lambda: "",
        typed: Callable[[], str] = lambda: "",
    ) -> None:
        self.stopping, self.status, self.typed = stopping, status, typed
        self.plan: Callable[[], str] = lambda: ""  # "plan 2/5 · step": redrawn in place
        self.spinner = Spinner("dots")  # one spinner, so its frames move on
        self.begin()

    def begin(self) -> None:
        """A user request starts: its clock and its token count."""
        self.started = time.monotonic()
        self.tokens_done = 0  # of the model calls this request finished
        self.tokens_now = 0  # streamed pieces of the call in progress (a token each, about)
        self.reading: tuple[int, int] | None = None  # the server's prefill: (read, of)

    def read(self, processed: int, total: int) -> None:
        """The server reports its prefill: said as a percentage until the first token,
        since seconds alone cannot tell a long prompt from a stuck server."""
        self.reading = (processed, total)

    def streamed(self) -> None:
        self.tokens_now += 1
        self.reading = None

    def turn(self, completion_tokens: int) -> None:
        self.tokens_done += completion_tokens or self.tokens_now
        self.tokens_now = 0
        self.reading = None

    def label(self) -> Text:
        """What the spinner says: stopping, reading the prompt (how far), or working."""
        if self.stopping():
            return Text("stopping…", style="yellow")
        if self.reading is not None:
            processed, total = self.reading
            percent = 100 * processed // total if total > 0 else 0
            return Text(f"reading prompt {percent}% ·", style="dim")
        return Text("working…", style="dim")

    def lines(self) -> int:
        return 1 + bool(self.status()) + bool(self.typed()) + bool(self.plan())

    def __rich__(self) -> Group:
        seconds = time.monotonic() - self.started
        tokens = self.tokens_done + self.tokens_now
        label = self.label()
        label.append(f" {seconds:.0f} s · {tokens:,} tokens · Esc stops", style="dim")
        self.spinner.update(text=label)
        rows: list[Spinner | Text] = [self.spinner]
        plan = self.plan()
        if plan:
            rows.append(Text(plan, style="cyan", no_wrap=True, overflow="ellipsis"))
        status = self.status()
        if status:
            rows.append(Text(status, style="reverse", no_wrap=True, overflow="ellipsis"))
        typed = self.typed()
        if typed:
            shown = Text(f"typed ahead: {visible(typed)}", style="dim")
            shown.no_wrap, shown.overflow = True, "ellipsis"
            rows.append(shown)
        return Group(*rows)
