"""The repository map in the prompt: where it goes, when it changes, how large it is.

Where: appended to the user's message that starts a request, never into the system
prompt. The head (system prompt and tool specs) stays byte-identical for the whole
session, so a saved prompt prefix (warm start) and the KV cache keep matching; a map
in the system prompt would change the head whenever a file changed.
When: at the start of a request, and only when the workspace's files changed since the
map last shown (a new one is appended to that request's message, the older one stays
in history): the prompt only grows at its end, which costs no cached token. Never in
the middle of a request, when the model is still working from what it was shown.
How large: `repo_map_tokens`, or by default a share of the context, capped, and none
for small contexts (see `auto_budget`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.history import AssistantToolUse, Message
from agent.tools.repomap import repo_map
from agent.tools.repomap.render import approx_tokens

MIN_CONTEXT = 16_384  # below this, no map by default
SHARE = 16  # the map's default budget: one sixteenth of the context…
CAP = 4_096  # …at most this many tokens
MAX_TOKENS = 32_768  # what `repo_map_tokens` may ask for
# tools whose `path` argument says the session looked at (or changed) that file
_FILE_TOOLS = ("read_file", "edit_file", "write_file", "outline")
_WORD = re.compile(r"[A-Za-z_][\w]{2,}")
_PATHISH = re.compile(r"[\w./-]+\.\w+")


def auto_budget(n_ctx: int | None) -> int:
    """The default: none below MIN_CONTEXT tokens, where the head (system prompt and
    tools, about 2k tokens) already fills a quarter of the window, compaction would come
    sooner, and the models that run there (the bundled 135M-270M ones) do not use a
    map; above it, a sixteenth of the context up to CAP (1k tokens at 16k, 4k at 64k)."""
    if not n_ctx or n_ctx < MIN_CONTEXT:
        return 0
    return min(n_ctx // SHARE, CAP)


def touched_files(history: Sequence[Message]) -> dict[str, float]:
    """Files the session read or edited (edits count double): what the ranking is
    personalised by."""
    out: dict[str, float] = {}
    for m in history:
        if isinstance(m, AssistantToolUse) and m.call.name in _FILE_TOOLS:
            path = m.call.arguments.get("path")
            if isinstance(path, str) and len(path) < 1000:
                weight = 1.0 if m.call.name in ("read_file", "outline") else 2.0
                key = path.removeprefix("./")
                out[key] = out.get(key, 0.0) + weight
    return out


@dataclass
class PromptMap:
    """The map a session shows its model; one per agent."""

    workspace: Path
    budget: int
    count: Callable[[str], int] = approx_tokens
    _shown: tuple[tuple[str, int, int], ...] | None = None  # the files of the map last shown

    def forget(self) -> None:
        """A new or resumed conversation: the next request gets the map again."""
        self._shown = None

    def note(self, prompt: str, history: Sequence[Message]) -> str:
        """The map to append to this request's message, or "" (unchanged since the last
        one shown, nothing to map, or no budget). Never raises: a map is a help, and a
        request must not fail for it."""
        if self.budget <= 0:
            return ""
        try:
            personal = touched_files(history)
            mentioned = set(_WORD.findall(prompt[:20_000]))
            for path in _PATHISH.findall(prompt[:20_000]):
                personal[path.removeprefix("./")] = personal.get(path, 0.0) + 1.0
            current = repo_map(self.workspace, personal=personal, mentioned=mentioned)
        except Exception:
            return ""
        files = tuple((p, e["size"], e["mtime"]) for p, e in sorted(current.scan.files.items()))
        if files == self._shown:
            return ""
        text = current.text(self.budget, self.count)
        self._shown = files
        return text


def with_map(prompt: str, note: str) -> str:
    return f"{prompt}\n\n{note}" if note else prompt
