"""Skills: folders with a SKILL.md (front matter `name`, `description`), as Claude Code
has them, disclosed progressively: the system prompt lists each skill's name and
description only, and the model reads a body when a task calls for it.

Found in the workspace's .bosun/skills/ and .claude/skills/ and in skills/ of bosun's
data folder (the user's own); the first folder with a name wins. The model reads a
body with the `skill` tool rather than read_file, because read_file is confined to the
workspace and the user's skills live outside it; one way for every skill keeps the
prompt short and the same for both. The tool reads only inside a skill's own folder,
under the same rules as the listing (no link out, no FIFO, capped).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from agent.session import bosun_home
from agent.tools.confine import open_in_workspace
from agent.tools.doc_folders import (
    MAX_ENTRIES,
    Warn,
    is_folder_inside,
    one_line,
    read_doc,
    roots,
    walk,
    warn_once,
)
from agent.tools.registry import ToolContext, ToolError, tool

MAX_SKILL_BYTES = 256 * 1024
SKILL_FILE = "SKILL.md"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path  # as found: inside the workspace, or the user's folder
    shown: str  # SKILL.md's path as the prompt names it (relative in the workspace)


def skill_folders(workspace: Path | None) -> list[tuple[Path, str]]:
    folders: list[tuple[Path, str]] = []
    if workspace is not None:
        folders += [(workspace / ".bosun" / "skills", "workspace")]
        folders += [(workspace / ".claude" / "skills", "workspace")]
    folders.append((bosun_home() / "skills", "user"))
    return folders


def find_skills(workspace: Path | None, warn: Warn = warn_once) -> list[Skill]:
    """Every skill, sorted by name: the list is part of the system prompt, so the same
    folders give the same bytes (and a saved prompt state still applies)."""
    found: dict[str, Skill] = {}
    for folder, origin, root in roots(skill_folders(workspace), workspace, warn):
        for _relative, entry in walk(root, 0, warn):  # one level: a skill is a folder
            if not is_folder_inside(entry, root, warn):
                continue
            if len(found) >= MAX_ENTRIES:
                break
            skill = _read_skill(root, entry.name, folder, origin, workspace, warn)
            if skill is not None and skill.name not in found:
                found[skill.name] = skill
    return [found[name] for name in sorted(found)]


def _read_skill(
    root: Path, sub: str, folder: Path, origin: str, workspace: Path | None, warn: Warn
) -> Skill | None:
    if not os.path.lexists(root / sub / SKILL_FILE):
        return None  # a folder of something else: not worth a warning
    doc = read_doc(root, f"{sub}/{SKILL_FILE}", MAX_SKILL_BYTES, warn)
    if doc is None:
        return None
    name = doc.meta.get("name", "").strip() or sub
    if not NAME.fullmatch(name):
        if not NAME.fullmatch(sub):
            warn(f"skipping {doc.path}: {name!r} is not a skill name")
            return None
        name = sub
    shown = folder / sub / SKILL_FILE
    if origin == "workspace" and workspace is not None:
        shown = shown.relative_to(workspace)
    return Skill(name, one_line(doc.meta.get("description", "")), folder / sub, str(shown))


@tool("read")
def skill(ctx: ToolContext, name: str, file: str = "") -> str:
    """Read a skill's instructions (its SKILL.md), or another file in the skill's folder.

    Args:
        name: the skill's name, as the system prompt lists it
        file: a file in the skill's folder that SKILL.md names (empty: SKILL.md itself)
    """
    skills = {s.name: s for s in find_skills(ctx.workspace, lambda _line: None)}
    found = skills.get(name)
    if found is None:
        known = ", ".join(skills) or "none"
        raise ToolError(f"no skill named {name!r} (skills: {known})")
    root = found.folder.resolve()
    if not file or file == SKILL_FILE:
        doc = read_doc(root, SKILL_FILE, MAX_SKILL_BYTES, lambda _line: None)
        if doc is None:
            raise ToolError(f"{found.shown} cannot be read now")
        return f"(skill {found.name}, folder {found.folder})\n\n{doc.body}"
    return _skill_file(root, file, found.name)


def _skill_file(root: Path, file: str, name: str) -> str:
    """A file beside SKILL.md: text, capped, never outside the skill's folder."""
    try:
        fd = open_in_workspace(root, file, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ToolError(f"{file}: {exc.strerror or exc} (in skill {name})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(f"{file} is not a regular file")
        data = os.read(fd, MAX_SKILL_BYTES + 1)
    finally:
        os.close(fd)
    if b"\x00" in data[:8192]:
        raise ToolError(f"{file} is a binary file; not shown")
    text = data[:MAX_SKILL_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_SKILL_BYTES:
        text += f"\n(… longer than {MAX_SKILL_BYTES} bytes; the rest is not shown)"
    return text
