"""Skills: listed in the system prompt (name and description), read with the skill tool."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.history import ToolResult
from agent.protocol.render import stable_head
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.run.system_prompt import system_message
from agent.tools import ToolContext
from agent.tools.doc_folders import MAX_DESCRIPTION
from agent.tools.skill import find_skills, skill


def call_skill(**arguments: str) -> str:
    """A skill call in the scripted model's envelope (tests.helpers.tool_call takes
    `name` itself)."""
    return (
        "<tool_call>\n" + json.dumps({"name": "skill", "arguments": arguments}) + "\n</tool_call>"
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


PDF = "---\nname: pdf-forms\ndescription: Fill in PDF forms with pdftk\n---\n# PDF forms\n"
PDF += "Run `pdftk form.pdf dump_data_fields` first; see reference.md.\n"


def chat_on(workspace: Path, script: Path) -> ChatSession:
    chat = ChatSession(
        Settings.from_config(Config(model=f"scripted:{script}"), workspace=workspace),
        lambda e: None,
        lambda call, tool: "yes",
    )
    chat.start_new()
    return chat


def test_skills_are_found_sorted_from_every_folder(workspace: Path, bosun_home: Path) -> None:
    write(workspace / ".bosun/skills/pdf/SKILL.md", PDF)
    write(workspace / ".claude/skills/zeta/SKILL.md", "---\ndescription: " + "z" * 900 + "\n---\n")
    write(workspace / ".claude/skills/pdf-forms/SKILL.md", "---\nname: pdf-forms\n---\nloses")
    write(bosun_home / "skills/mine/SKILL.md", "---\nname: Mine\ndescription: my own\n---\nbody")
    write(workspace / ".bosun/skills/notes/README.md", "not a skill")
    skills = find_skills(workspace)
    assert [s.name for s in skills] == ["Mine", "pdf-forms", "zeta"]
    mine, pdf, zeta = skills
    assert pdf.description == "Fill in PDF forms with pdftk"
    assert pdf.shown == ".bosun/skills/pdf/SKILL.md"
    assert mine.shown == str(bosun_home / "skills/mine/SKILL.md")
    assert len(zeta.description) == MAX_DESCRIPTION and zeta.description.endswith("…")


def test_the_system_prompt_lists_names_and_descriptions_only(workspace: Path) -> None:
    assert "# Skills" not in system_message(workspace).content
    write(workspace / ".bosun/skills/pdf/SKILL.md", PDF)
    prompt = system_message(workspace).content
    assert "- pdf-forms: Fill in PDF forms with pdftk (.bosun/skills/pdf/SKILL.md)" in prompt
    assert "dump_data_fields" not in prompt  # the body waits for the skill tool


def test_the_model_reads_a_skill_body(workspace: Path, bosun_home: Path, script_file) -> None:
    write(workspace / ".bosun/skills/pdf/SKILL.md", PDF)
    write(bosun_home / "skills/mine/SKILL.md", "---\ndescription: my own\n---\nUSER BODY")
    write(bosun_home / "skills/mine/reference.md", "REFERENCE TEXT")
    script = script_file(
        call_skill(name="pdf-forms"),
        call_skill(name="mine"),  # outside the workspace: read_file could not
        call_skill(name="mine", file="reference.md"),
        call_skill(name="mine", file="../../config.toml"),
        call_skill(name="nope"),
        "done",
    )
    chat = chat_on(workspace, script)
    try:
        assert "skill" in chat.tools.names
        assert chat.send("fill the form").status == "done"
        results = [m for m in chat.history if isinstance(m, ToolResult)]
        assert "dump_data_fields" in results[0].content and not results[0].is_error
        assert "name: pdf-forms" not in results[0].content  # front matter is not the body
        assert "USER BODY" in results[1].content
        assert results[2].content == "REFERENCE TEXT"
        assert results[3].is_error and "outside" in results[3].content
        assert results[4].is_error and "no skill named 'nope'" in results[4].content
    finally:
        chat.close()


def test_no_skills_no_skill_tool(workspace: Path, script_file) -> None:
    chat = chat_on(workspace, script_file("done"))
    try:
        assert "skill" not in chat.tools.names
    finally:
        chat.close()


def head(chat: ChatSession) -> str:
    prompt = chat.next_prompt()
    specs = chat.tools.specs()
    return prompt[: stable_head(chat.profile, chat.history, specs, prompt)]


def test_sessions_with_the_same_skills_share_their_head(workspace: Path, script_file) -> None:
    write(workspace / ".bosun/skills/b/SKILL.md", "---\ndescription: second\n---\nB")
    write(workspace / ".bosun/skills/a/SKILL.md", "---\ndescription: first\n---\nA")
    first, second = chat_on(workspace, script_file("x")), chat_on(workspace, script_file("y"))
    try:
        assert head(first) == head(second)
        assert "- a: first" in head(first)
        assert head(first).index("- a: first") < head(first).index("- b: second")
    finally:
        first.close()
        second.close()
    write(workspace / ".bosun/skills/c/SKILL.md", "---\ndescription: third\n---\nC")
    third = chat_on(workspace, script_file("z"))
    try:
        assert head(third) != head(first) and "- c: third" in head(third)
    finally:
        third.close()


def test_hostile_skill_folders(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = workspace / ".bosun/skills"
    write(folder / "good/SKILL.md", "---\ndescription: fine\n---\nok")
    secret = write(tmp_path / "outside/SKILL.md", "---\nname: stolen\n---\nSECRET")
    (folder / "leaky").mkdir()
    os.symlink(secret, folder / "leaky/SKILL.md")
    os.symlink(secret.parent, folder / "linked")
    (folder / "fifo").mkdir()
    os.mkfifo(folder / "fifo/SKILL.md")
    write(folder / "huge/SKILL.md", "---\ndescription: big\n---\n" + "x" * (256 * 1024))
    write(folder / "bad/SKILL.md", "---\nname: [1, 2\ndescription: {oops\n---\nbody")
    write(folder / "badname/SKILL.md", "---\nname: ../../etc\n---\nbody")
    skills = {s.name: s for s in find_skills(workspace)}
    assert set(skills) == {"good", "bad", "badname"}  # bad front matter: the folder's name
    err = capsys.readouterr().err
    assert f"skipping {folder}/leaky/SKILL.md: it leads outside {folder}" in err
    assert f"skipping {folder}/linked: it leads outside {folder}" in err
    assert f"skipping {folder}/fifo/SKILL.md: not a regular file" in err
    assert f"skipping {folder}/huge/SKILL.md: " in err
    ctx = ToolContext(workspace)
    assert skill.func(ctx, "good").endswith("ok")
