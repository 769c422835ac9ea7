"""A real terminal for REPL tests: a private tmux server per test, polled with a deadline.

Each test gets its own socket (`tmux -L NAME`), so tests can run in parallel and a
crashed one leaves nothing behind for the next. NO_COLOR and a private BOSUN_HOME make
the screen deterministic.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TMUX = shutil.which("tmux")


def _chat_is_wired() -> bool:
    from agent.cli.main import app

    return any(
        (c.name or getattr(c.callback, "__name__", "")) == "chat" for c in app.registered_commands
    )


needs_tmux = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
needs_chat = pytest.mark.skipif(
    not _chat_is_wired(), reason="the `chat` command is not wired into agent/cli/main.py yet"
)


class Terminal:
    """An 80x30 terminal running `bosun chat`; the pane stays open after it exits."""

    def __init__(self, home: Path, width: int = 80, height: int = 30) -> None:
        assert TMUX is not None
        self.socket = f"bosun-test-{uuid.uuid4().hex[:10]}"
        self.home = home
        self.width, self.height = width, height
        self.color = False

    def _tmux(self, *args: str) -> str:
        out = subprocess.run(
            [str(TMUX), "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=30,
        )
        if out.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {out.stderr.strip()}")
        return out.stdout

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "BOSUN_DEBUG")}
        env.update(BOSUN_HOME=str(self.home), PYTHONPATH=str(REPO), LANG="C.UTF-8")
        env.pop("NO_COLOR", None)
        if not self.color:
            env["NO_COLOR"] = "1"
        return env

    def start(
        self, *args: str, color: bool = False, command: str = "chat", pipe_from: Path | None = None
    ) -> None:
        """`bosun COMMAND ARGS` in the pane; `pipe_from`: a file piped into its stdin
        (`cat FILE | bosun …`, as typed at a shell), the screen still a terminal."""
        self.color = color
        chat = shlex.join([sys.executable, "-m", "agent", command, *args])
        if pipe_from is not None:
            chat = f"cat {shlex.quote(str(pipe_from))} | {chat}"
        # Keep the pane after exit so the test can read the exit code.
        command = f'{chat}; echo "[exit $?]"; sleep 300'
        self._tmux(
            "new-session", "-d", "-x", str(self.width), "-y", str(self.height),
            "-c", str(REPO), command,
        )  # fmt: skip

    def send(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "0", *keys)

    def type(self, text: str) -> None:
        """Literal text (no key-name lookup), without pressing Enter."""
        self._tmux("send-keys", "-t", "0", "-l", text)

    def type_like_a_typist(self, text: str, gap: float) -> None:
        """One key at a time, `gap` seconds apart (0.06 s: a fast typist), so keys land
        before, while and after the screen changes."""
        for char in text:
            self.type(char)
            time.sleep(gap)

    def answer(self, *keys: str) -> None:
        """Keys a person presses at a question they have just read: after the pause that
        tells an answer from type-ahead (agent.ui.input.GRACE_S)."""
        from agent.ui.input import GRACE_S

        time.sleep(GRACE_S + 0.2)
        self.send(*keys)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "0")

    def colours(self) -> set[str]:
        """The SGR colour codes on screen (foreground/background), attributes aside."""
        styled = self._tmux("capture-pane", "-p", "-e", "-S", "-", "-t", "0")
        found: set[str] = set()
        for params in re.findall(r"\x1b\[([0-9;]*)m", styled):
            codes = params.split(";")
            for i, code in enumerate(codes):
                if code in ("38", "48"):
                    found.add(";".join(codes[i:]))
                    break
                colour = code.isdigit() and (30 <= int(code) <= 47 or 90 <= int(code) <= 107)
                if colour and int(code) not in (39, 49):  # "default colour" is no colour
                    found.add(code)
        return found

    def scrollback(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "0")

    def wait_for(
        self, wanted: str | Callable[[str], bool], timeout: float = 20.0, *, after: int = 0
    ) -> str:
        """The scrollback once `wanted` appears in it (past offset `after`); fails with
        the screen's contents when it does not within `timeout` seconds."""
        check = wanted if callable(wanted) else (lambda text: wanted in text)
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.scrollback()
            if check(text[after:]):
                return text
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {wanted!r}; the terminal shows:\n{text}")

    def close(self) -> None:
        subprocess.run(
            [str(TMUX), "-L", self.socket, "kill-server"], capture_output=True, timeout=30
        )


def input_line(text: str) -> str | None:
    """The line being edited at the prompt (None when no prompt is up): the last
    non-blank line above the status toolbar."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or "│" not in lines[-1] or not lines[-2].startswith(">"):
        return None
    return lines[-2]


def prompt_ready(text: str) -> bool:
    """The input prompt is up, empty, and waiting."""
    return input_line(text) == ">"
