"""Custom slash commands: Markdown files whose body becomes the prompt, as in Claude Code
(.claude/commands/) and Codex CLI (~/.codex/prompts/).

`/review src/app.py` with .bosun/commands/review.md sends that file's body with
`$ARGUMENTS` replaced by "src/app.py" and `$1`…`$9` by the words of it (split the way a
shell would, tolerant of an unclosed quote); `$$` is a literal `$`. A body with no
placeholder gets the arguments appended (`ARGUMENTS: …`), as Claude Code does, so they
are never silently lost. A file in a subfolder is `/folder:name` (a real subfolder: a link
to a folder is not followed, so a loop of links costs nothing; agent.tools.doc_folders).

Where they come from, the first folder that has a name wins: the workspace's
.bosun/commands/ and .claude/commands/, then the user's own: commands/ in bosun's data
folder (next to config.toml), ~/.claude/commands/ and ~/.codex/prompts/ ($CODEX_HOME).
The workspace's files are repository content, but a command only ever expands into a
prompt the user chose to send (and then runs under the same approval mode as anything
typed), so no trust question is asked for them, unlike workspace hooks or MCP servers.
Built-in commands (/help, /model …) win over a custom command of the same name.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from agent.session import bosun_home
from agent.tools.doc_folders import (
    MAX_DEPTH,
    MAX_ENTRIES,
    Warn,
    is_folder_inside,
    one_line,
    read_doc,
    roots,
    walk,
    warn_once,
)

MAX_COMMAND_BYTES = 64 * 1024
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(:[A-Za-z0-9][A-Za-z0-9_.-]*)*")
_PLACEHOLDER = re.compile(r"\$(\$|ARGUMENTS|[1-9])")


@dataclass(frozen=True)
class CustomCommand:
    name: str  # without the slash: "review", "frontend:component"
    description: str
    argument_hint: str
    body: str
    path: Path
    origin: str  # "workspace" or "user": what /help says next to it

    def expand(self, arguments: str) -> str:
        return expand(self.body, arguments)


def command_folders(workspace: Path | None) -> list[tuple[Path, str]]:
    """Where commands are looked for, the winner of a name first."""
    folders: list[tuple[Path, str]] = []
    if workspace is not None:
        folders += [(workspace / ".bosun" / "commands", "workspace")]
        folders += [(workspace / ".claude" / "commands", "workspace")]
    folders.append((bosun_home() / "commands", "user"))
    home = Path(os.environ.get("HOME") or Path.home())
    folders.append((home / ".claude" / "commands", "user"))
    codex = os.environ.get("CODEX_HOME")
    folders.append(((Path(codex) if codex else home / ".codex") / "prompts", "user"))
    return folders


def find_commands(workspace: Path | None, warn: Warn = warn_once) -> dict[str, CustomCommand]:
    """Every custom command, by name, sorted; read afresh on each call, so a file added
    or edited mid-session counts from the next use."""
    found: dict[str, CustomCommand] = {}
    for folder, origin, root in roots(command_folders(workspace), workspace, warn):
        for name, relative in _markdown_files(root, warn):
            if name in found or len(found) >= MAX_ENTRIES:
                continue
            doc = read_doc(root, relative, MAX_COMMAND_BYTES, warn)
            if doc is None:
                continue
            found[name] = CustomCommand(
                name,
                one_line(doc.meta.get("description", "")),
                one_line(doc.meta.get("argument-hint", ""), 80),
                doc.body,
                folder / relative,
                origin,
            )
    return dict(sorted(found.items()))


def _markdown_files(root: Path, warn: Warn) -> list[tuple[str, str]]:
    """(command name, path relative to root) of each .md file below root, through
    subfolders whose names may be part of a command's name."""
    out: list[tuple[str, str]] = []
    for relative, entry in walk(root, MAX_DEPTH, warn, _may_enter):
        if is_folder_inside(entry, root, warn):
            if entry.is_symlink():  # never walked: see doc_folders.walk
                warn(f"skipping {root / relative}: a link to a folder is not followed")
            continue
        _stem, dot, ext = entry.name.rpartition(".")
        if not dot or ext.lower() != "md":
            continue
        name = relative[: -len(ext) - 1].replace("/", ":")
        if NAME.fullmatch(name):
            out.append((name, relative))
        else:
            warn(f"skipping {root / relative}: {name!r} is not a command name")
    return out


def _may_enter(relative: str) -> bool:
    """A subfolder is walked only where its name can be part of a command's name."""
    return NAME.fullmatch(relative.rsplit("/", 1)[-1]) is not None


def expand(body: str, arguments: str) -> str:
    """The prompt a command's body makes with these arguments."""
    arguments = arguments.strip()
    words = split_arguments(arguments)
    used = False

    def sub(m: re.Match[str]) -> str:
        nonlocal used
        key = m.group(1)
        if key == "$":
            return "$"
        used = True
        if key == "ARGUMENTS":
            return arguments
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    text = _PLACEHOLDER.sub(sub, body).strip()
    if arguments and not used:
        text += f"\n\nARGUMENTS: {arguments}"
    return text


def split_arguments(arguments: str) -> list[str]:
    """Words as a shell splits them; an unclosed quote (`it's`) falls back to spaces
    rather than failing the command."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def parse_invocation(text: str) -> tuple[str, str] | None:
    """("name", "arguments") for text that starts with `/name`, else None."""
    if not text.startswith("/"):
        return None
    head, _, rest = text[1:].partition(" ")
    name, newline, more = head.partition("\n")
    if newline:
        rest = more + (" " + rest if rest else "")
    return (name, rest) if NAME.fullmatch(name) else None


def expand_prompt(text: str, workspace: Path | None, warn: Warn = warn_once) -> str:
    """A `bosun run` prompt: `/name args` naming a custom command becomes its expansion;
    anything else (a path such as /etc/hosts, an unknown name) is sent as it is."""
    invocation = parse_invocation(text.strip())
    if invocation is None:
        return text
    command = find_commands(workspace, warn).get(invocation[0])
    return text if command is None else command.expand(invocation[1])
