"""The agent's system message: bosun's instructions (templates/system.jinja), the
project's own (AGENTS.md), and the workspace's top-level entries, read once per session.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from agent.errors import ToolError
from agent.history import System
from agent.protocol.jinja_env import compile_template
from agent.protocol.profile import load_template
from agent.resources import template_path
from agent.tools.confine import open_in_workspace
from agent.tools.skill import Skill, find_skills


def system_prompt(
    workspace: str,
    instructions: str = "",
    instructions_source: str = "AGENTS.md",
    files: Sequence[str] = (),
    skills: Sequence[Skill] = (),
) -> str:
    """The agent's system message (templates/system.jinja), rendered once per session."""
    source = load_template(template_path("system.jinja"))
    return str(
        compile_template(source).render(
            workspace=workspace,
            instructions=instructions,
            instructions_source=instructions_source,
            files=list(files),
            skills=list(skills),
        )
    ).strip()


MAX_INSTRUCTIONS_BYTES = 16_000


def project_instructions(workspace: Path) -> tuple[str, str]:
    """AGENTS.md (or BOSUN.md), opened like any workspace file: a symlink out of the
    workspace, a FIFO or a device is skipped, and at most 16 kB are read, however large
    the file claims to be. It is repository content, so it goes into the prompt as data."""
    for name in ("AGENTS.md", "BOSUN.md"):
        try:
            fd = open_in_workspace(workspace, name, os.O_RDONLY | os.O_NONBLOCK)
        except (ToolError, OSError):
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = os.read(fd, MAX_INSTRUCTIONS_BYTES + 1)
        except OSError:
            continue
        finally:
            os.close(fd)
        text = data[:MAX_INSTRUCTIONS_BYTES].decode("utf-8", errors="replace")
        if len(data) > MAX_INSTRUCTIONS_BYTES:
            text += f"\n(… {name} is longer than {MAX_INSTRUCTIONS_BYTES} bytes; the rest is cut)"
        return text, name
    return "", "AGENTS.md"


def workspace_files(workspace: Path, limit: int = 40) -> list[str]:
    """Top-level entries, so a small model can name real paths from its first call."""
    skip = {".git", ".venv", "node_modules", "__pycache__"}
    entries: list[str] = []
    count = 0
    try:
        with os.scandir(workspace) as it:
            for entry in it:
                if entry.name in skip:
                    continue
                count += 1
                if len(entries) < 10_000:  # a huge folder is counted, not held
                    folder = entry.is_dir(follow_symlinks=False)
                    entries.append(entry.name + ("/" if folder else ""))
    except OSError:
        return []
    names = sorted(entries)[:limit]
    return names + ([f"… ({count - limit} more)"] if count > limit else [])


def system_message(workspace: Path) -> System:
    instructions, source = project_instructions(workspace)
    files = workspace_files(workspace)
    skills = find_skills(workspace)  # sorted: the same folders give the same head
    return System(system_prompt(str(workspace), instructions, source, files, skills))
