"""Reading the user's input with prompt-toolkit: multi-line editing, history, completion.

Enter sends and Esc-Enter (Alt-Enter) starts a new line: a chat is mostly one-line
messages, and a pasted block arrives as a bracketed paste, newlines included, without
sending early. Ctrl-C clears a non-empty buffer and only reports an interrupt when the
buffer is already empty, so the REPL can ask for a second Ctrl-C before it exits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyBindings, KeyPress, KeyPressEvent
from prompt_toolkit.keys import Keys

PROMPT = "> "
# A key answers a one-key question only after this long without typing: keys closer
# together than this are a typist's flow (type-ahead), however fast the question came.
GRACE_S = 0.4
# Keys typed during an answer that the next prompt gets (besides characters).
TYPE_AHEAD_KEYS = {
    Keys.ControlM,  # Enter
    Keys.ControlJ,
    Keys.ControlH,  # Backspace
    Keys.ControlI,  # Tab
    Keys.Left,
    Keys.Right,
    Keys.Up,
    Keys.Down,
    Keys.Home,
    Keys.End,
    Keys.Delete,
    Keys.BracketedPaste,
}
CONTINUATION = ". "


class SlashCompleter(Completer):
    """Completes `/command` names, then the command's argument (modes, session ids), and
    an `@path` anywhere in a message to the workspace's files (`paths`)."""

    def __init__(
        self,
        commands: Mapping[str, str],
        arguments: Mapping[str, Callable[[], list[str]]],
        paths: Callable[[str], list[str]] | None = None,
    ) -> None:
        self.commands = commands
        self.arguments = arguments
        self.paths = paths

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        text = document.text_before_cursor
        word = text.split()[-1] if text and not text[-1].isspace() else ""
        if word.startswith("@") and self.paths is not None:
            for path in self.paths(word[1:]):
                yield Completion("@" + path, -len(word))
            return
        if not text.startswith("/") or "\n" in text:
            return
        name, sep, arg = text.partition(" ")
        if not sep:
            for command, help_text in self.commands.items():
                if command.startswith(name):
                    yield Completion(command, -len(name), display_meta=help_text)
            return
        source = self.arguments.get(name)
        if source is None or " " in arg:
            return
        for value in source():
            if value.startswith(arg):
                yield Completion(value, -len(arg))


def key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("enter")
    def _send(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
            return
        buffer.validate_and_handle()

    @kb.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    return kb


class Input:
    """The REPL's two questions: "what next?" and "allow this tool call?"."""

    def __init__(
        self,
        history_file: Path,
        completer: Completer,
        toolbar: Callable[[], str],
    ) -> None:
        history_file.parent.mkdir(parents=True, exist_ok=True)
        self.session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history_file)),
            completer=completer,
            complete_while_typing=True,
            key_bindings=key_bindings(),
            multiline=True,
            prompt_continuation=CONTINUATION,
            bottom_toolbar=toolbar,
            enable_open_in_editor=False,
        )
        self._ask: PromptSession[str] = PromptSession()

    def type_ahead(self, data: bytes) -> None:
        """Keys typed while the model worked (the Esc watcher read them) are the next
        prompt's first keys, as in a shell: text waits in the input line and a line
        ended with Enter is sent. Other control keys (Ctrl-D would exit) are dropped."""
        if not data:
            return
        keys: list[KeyPress] = []
        parser = Vt100Parser(keys.append)
        parser.feed(data.decode("utf-8", errors="replace"))
        parser.flush()
        kept = [k for k in keys if k.key in TYPE_AHEAD_KEYS or len(k.key) == 1]
        store_typeahead(self.session.input, kept)

    def take_type_ahead(self) -> bytes:
        """Keys prompt-toolkit read past the Enter that sent a message: typed ahead, and
        first in line. Taken here, or the next prompt-toolkit question (an approval,
        which shares the terminal's type-ahead store) would read them first."""
        keys = get_typeahead(self.session.input)
        return "".join(press.data for press in keys).encode("utf-8", errors="replace")

    def read(self) -> str:
        """The next message; KeyboardInterrupt (Ctrl-C on empty input) or EOFError (^D)."""
        return self.session.prompt(PROMPT)

    def ask(self, question: str) -> str:
        return self._ask.prompt(question)

    def ask_key(self, question: str, keys: str, held: Callable[[str], None] | None = None) -> str:
        return ask_key(question, keys, held)


def ask_key(question: str, keys: str, held: Callable[[str], None] | None = None) -> str:
    """One key of `keys` answers at once, no Enter; Ctrl-C raises KeyboardInterrupt,
    Ctrl-D EOFError, as at the main prompt.

    A key only answers once the keyboard has been quiet for GRACE_S since the question
    was drawn (or since the last key typed ahead): a fast typist's `yes and also`, sent
    as the question appeared, is typing meant for the input line, not a `y` and an `a`.
    Such keys, and any other key, go to `held` (the type-ahead), never to the answer."""
    kb = KeyBindings()
    quiet_since = [time.monotonic()]

    def typing(event: KeyPressEvent) -> bool:
        now = time.monotonic()
        flowing = now - quiet_since[0] < GRACE_S
        quiet_since[0] = now
        return flowing

    def hold(event: KeyPressEvent) -> None:
        if held is not None:
            held("".join(press.data for press in event.key_sequence))

    @kb.add(Keys.Any)
    @kb.add("enter")  # else the default binding would accept the empty line
    @kb.add("backspace")
    def _other(event: KeyPressEvent) -> None:
        typing(event)
        hold(event)

    def answer(event: KeyPressEvent, key: str) -> None:
        if typing(event):
            hold(event)
            return
        event.current_buffer.insert_text(key)  # left on screen as the answer
        event.app.exit(result=key)

    for key in keys:
        for variant in {key.lower(), key.upper()}:
            kb.add(variant)(lambda event, k=key: answer(event, k))

    @kb.add("c-d")
    def _eof(event: KeyPressEvent) -> None:
        event.app.exit(exception=EOFError)

    def drawn() -> None:
        quiet_since[0] = time.monotonic()

    session: PromptSession[str] = PromptSession(key_bindings=kb)
    try:
        return session.prompt(question, pre_run=drawn)
    finally:  # keys read past the answer: type-ahead too, in order
        rest = get_typeahead(session.input)
        if rest and held is not None:
            held("".join(press.data for press in rest))
