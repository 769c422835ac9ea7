"""The question a chat asks before it runs hooks a workspace names (agent.run.hooks).

Each command is folded as the bash approval folds one (agent.untrusted.fold): a hook
padded with blank lines would otherwise push its end off the screen above the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from textwrap import indent

from rich.console import Console
from rich.status import Status
from rich.text import Text

from agent.tools.hooks import HookSpec
from agent.untrusted import fold, one_line


def ask_hooks(console: Console, status: Status | None, hooks: Sequence[HookSpec]) -> bool:
    """Once per workspace and set of hook commands: hooks the repository names run
    programs of its choosing at every tool call, so the user sees each one first (the
    loading spinner, if one runs, pauses meanwhile)."""
    if status is not None:
        status.stop()
    n = len(hooks)
    width = max(20, console.width - 6)
    console.print(Text(f"this workspace names {n} hook{'s' if n > 1 else ''}:", "yellow"))
    for hook in hooks:
        where = f" [{one_line(hook.matcher, width // 2)}]" if hook.matcher not in ("", "*") else ""
        head = f"  {one_line(hook.event, width // 2)}{where}:"
        shown = fold(hook.command, width)
        console.print(
            Text(f"{head}\n{indent(shown, '    ')}" if "\n" in shown else f"{head} {shown}")
        )
        console.print(Text(f"    from {one_line(hook.source, width)}", "dim"))
    try:
        answer = console.input(Text("Run them (remembered for these commands)? [y/N] "))
    except EOFError:
        return False
    finally:
        if status is not None:
            status.start()
    return answer.strip().lower() in ("y", "yes")
