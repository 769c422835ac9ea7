"""`/rewind` in chat: back to before an earlier user request, files and conversation.

Claude Code's rewind, in bosun's terms: the files go back first (all or nothing, by the
checkpoints' rule: a file changed since bosun's last request is refused, named), and
only then is the conversation cut, so a refusal leaves both as they were.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.errors import UsageError
from agent.untrusted import visible

if TYPE_CHECKING:
    from agent.ui.slash import Repl


def rewind_command(repl: Repl, arg: str) -> None:
    checkpoints = repl.chat.checkpoints
    marks = checkpoints.marks
    if not arg:
        if not marks:
            repl.say("no requests to rewind to yet")
            return
        shadow = checkpoints.shadow
        for number, (_, prompt) in sorted(marks.items()):
            first = visible(prompt).strip().splitlines()[0][:70] if prompt.strip() else ""
            files = shadow is not None and shadow.ref(number, "before") is not None
            repl.say(f"{number:>3}  {first}" + ("" if files else "  (conversation only)"))
        repl.say("/rewind N restores the files and the conversation to before request N")
        return
    if not arg.isdigit() or int(arg) < 1:
        raise UsageError("/rewind N goes back to before request N (/rewind lists them)")
    number = int(arg)
    prompt = marks.get(number, (0, ""))[1]
    undone = repl.chat.rewind(number)
    put_back = [p for p in undone.restored if p not in undone.removed]
    if put_back:
        repl.say("restored: " + ", ".join(put_back))
    if undone.removed:
        repl.say("deleted (made since): " + ", ".join(undone.removed))
    if undone.not_saved:
        repl.say("not restored (over the size cap): " + ", ".join(undone.not_saved))
    for path, why in undone.failed:
        repl.say(f"could not restore {path}: {why}", "yellow")
    if checkpoints.shadow is None:
        repl.say("(without git, changes made by shell commands are not restored)")
    repl.say(f"back to before request {number}; its prompt was: {visible(prompt)[:200]}")
