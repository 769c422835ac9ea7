"""Text piped into `bosun run "PROMPT"`: like `llm` and `claude -p`, it joins the prompt.

`cat calc.py | bosun run "Summarise this code"` sends one message: the prompt, then the
piped text. Only a pipe or a file on stdin counts (a terminal is the user, /dev/null is
nothing). A pipe that stays open with nothing in it (a CI runner's stdin, say) must not
hang the run, so bosun waits a while for its first byte or its end, then goes on
without it and says so; once text arrives it is read to the end.
"""

from __future__ import annotations

import os
import select
import stat
import sys
from typing import BinaryIO, TextIO

from agent.errors import UsageError

MAX_PIPED = 256 * 1024  # bytes kept, like read_file's limit
FIRST_BYTE_WAIT = 3.0  # seconds
MAX_PROMPT = 1024 * 1024  # `bosun run -`: a whole prompt, refused beyond this


def prompt_from_stdin(stream: BinaryIO | TextIO | None = None) -> str:
    """`bosun run -`: the prompt is all of stdin, read to its end but never past
    MAX_PROMPT bytes (`yes | bosun run -` must not eat the memory), and decoded so
    that a stray non-UTF-8 byte is a replacement character, not a crash."""
    given = stream if stream is not None else sys.stdin
    raw = getattr(given, "buffer", given)
    data = raw.read(MAX_PROMPT + 1)
    if len(data) > MAX_PROMPT:
        raise UsageError(
            f"the prompt on stdin is over {MAX_PROMPT // 2**20} MB; give a shorter one"
            " (or pipe the text into `bosun run PROMPT`, which keeps its first"
            f" {MAX_PIPED // 1024} kB)"
        )
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def piped_text(stream: BinaryIO | None = None, wait: float = FIRST_BYTE_WAIT) -> str | None:
    """What was piped in (at most MAX_PIPED bytes, then a note), or None."""
    stream = stream if stream is not None else sys.stdin.buffer
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return None
    if os.isatty(fd) or not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)):
        return None
    if not stat.S_ISREG(mode):
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            sys.stderr.write(
                f"bosun: stdin is a pipe with nothing in it after {wait:g} s; going on"
                " without it (`bosun run -` waits for a prompt there)\n"
            )
            return None
    data = stream.read(MAX_PIPED + 1)
    if not data:
        return None
    text = data[:MAX_PIPED].decode("utf-8", errors="replace")
    if len(data) > MAX_PIPED:
        text += f"\n[… piped input cut at {MAX_PIPED // 1024} kB]"
    return text


def with_piped(prompt: str, piped: str | None) -> str:
    """The one message the model gets: the prompt, then the piped text."""
    if not piped or not piped.strip():
        return prompt
    return f"{prompt}\n\nPiped input:\n{piped.rstrip()}\n"
