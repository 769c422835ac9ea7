"""The question a chat asks before it runs hooks a workspace names (agent.run.hooks)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.status import Status
from rich.text import Text

from agent.tools.hooks import HookSpec
from agent.untrusted import visible


def ask_hooks(console: Console, status: Status | None, hooks: Sequence[HookSpec]) -> bool:
    """Once per workspace and set of hook commands: hooks the repository names run
    programs of its choosing at every tool call, so the user sees each one first (the
    loading spinner, if one runs, pauses meanwhile)."""
    if status is not None:
        status.stop()
    n = len(hooks)
    console.print(Text(f"this workspace names {n} hook{'s' if n > 1 else ''}:", "yellow"))
    for hook in hooks:
        where = f" [{hook.matcher}]" if hook.matcher not in ("", "*") else ""
        console.print(Text(f"  {hook.event}{visible(where)}: {visible(hook.command)}"))
        console.print(Text(f"    from {visible(hook.source)}", "dim"))
    try:
        answer = console.input(Text("Run them (remembered for these commands)? [y/N] "))
    except EOFError:
        return False
    finally:
        if status is not None:
            status.start()
    return answer.strip().lower() in ("y", "yes")
