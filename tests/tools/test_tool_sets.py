"""Which tools a model is offered: its profile's changes (gpt-oss gets apply_patch for
edit_file and write_file), then the user's (--tools, `tools = "…"` in a config file);
the grammar is built from the same set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.errors import UsageError
from agent.protocol.capabilities import CapabilitiesError, load_table
from agent.protocol.profile import profile_for
from agent.run.assemble import Assembly
from agent.run.config import load_config
from agent.run.settings import Settings
from agent.tools import KNOWN, parse_tool_changes, tool_set

GPT_OSS = "openai:http://127.0.0.1:9/v1#gpt-oss-20b"


def names(changes: list[str] | tuple[str, ...]) -> list[str]:
    return [t.name for t in tool_set(changes)]


def test_changes_parse_and_apply_in_order() -> None:
    assert parse_tool_changes("+apply_patch, -edit_file,,bash") == (
        "+apply_patch",
        "-edit_file",
        "+bash",
    )
    assert names(["+apply_patch", "-edit_file", "-write_file"]) == [
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "apply_patch",
        "bash",
        "update_plan",
    ]
    assert "edit_file" in names(["-edit_file", "+edit_file"])
    assert "apply_patch" not in names([])


@pytest.mark.parametrize(
    ("spec", "said"),
    [("+nope", "unknown tool 'nope'"), ("+edit file", r"is not \+NAME"), ("*x", r"is not \+NAME")],
)
def test_bad_changes_are_one_line_usage_errors(spec: str, said: str) -> None:
    with pytest.raises(UsageError, match=said) as caught:
        parse_tool_changes(spec)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "model", [GPT_OSS, "openai:http://127.0.0.1:9/v1#gpt-4.1", "openai:http://h/v1#o3"]
)
def test_gpt_models_get_apply_patch_instead_of_edit_tools(model: str) -> None:
    profile = profile_for(model)
    assert profile.tool_changes == ("+apply_patch", "-edit_file", "-write_file")
    tools = Assembly(Settings(model=model), None, profile, None).tools()  # type: ignore[arg-type]
    assert "apply_patch" in tools and "edit_file" not in tools and "write_file" not in tools


def test_other_models_keep_edit_file_and_the_user_changes_come_last() -> None:
    smol = profile_for("smollm2-135m")
    assert smol.tool_changes == ("-update_plan",)  # the tiny bundled model: no plan tool
    plain = Assembly(Settings(), None, smol, None).tools()  # type: ignore[arg-type]
    assert "edit_file" in plain and "apply_patch" not in plain
    back = Settings(model=GPT_OSS, tools=("+edit_file",))
    tools = Assembly(back, None, profile_for(GPT_OSS), None).tools()  # type: ignore[arg-type]
    assert "edit_file" in tools and "apply_patch" in tools


def test_the_grammar_follows_the_tool_set() -> None:
    profile = profile_for("smollm2-135m")
    changes = ("+apply_patch", "-edit_file", "-write_file")
    specs = [t.spec() for t in tool_set(changes)]
    grammars = profile.grammars(specs)
    assert grammars is not None
    first = grammars[0]
    assert '\\"apply_patch\\"' in first and "edit_file" not in first and "write_file" not in first


def test_capabilities_tools_are_checked_and_name_known_tools() -> None:
    bad = '[[rule]]\nid = "x"\nname = ["x*"]\ntools = ["apply_patch"]\n[[rule]]\nid = "default"\n'
    with pytest.raises(CapabilitiesError, match="tools must be"):
        load_table(bad)
    known = {t.name for t in KNOWN}
    for rule in load_table().rules:
        assert {c[1:] for c in rule.caps.tools} <= known, rule.caps.rule


def test_config_files_take_tools(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text('tools = "+apply_patch,-bash"\n')
    assert load_config(None, user_file=user).tools == ("+apply_patch", "-bash")
    user.write_text('tools = "+frob"\n')
    with pytest.raises(UsageError, match="unknown tool 'frob'"):
        load_config(None, user_file=user)
    user.write_text("tools = 3\n")
    with pytest.raises(UsageError, match="must be a string"):
        load_config(None, user_file=user)


def bosun(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("command", ["run", "chat"])
def test_unknown_tools_on_the_command_line_exit_2(command: str, workspace: Path) -> None:
    extra = ["hi"] if command == "run" else []
    out = bosun(command, *extra, "--tools", "+apply_patch,-nope", "-w", str(workspace))
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "bosun: error: --tools: unknown tool 'nope' (known: read_file, list_dir, glob,"
        " grep, outline, find_symbol, write_file, edit_file, apply_patch, bash, update_plan,"
        " skill)"
    )


def test_run_with_tools_offers_and_runs_apply_patch(workspace: Path, script_file) -> None:
    patch = (
        "*** Begin Patch\n*** Update File: notes.txt\n@@\n-hello from bosun\n+patched\n"
        "*** End Patch"
    )
    call = json.dumps({"name": "apply_patch", "arguments": {"input": patch}})
    edit = json.dumps(
        {"name": "edit_file", "arguments": {"path": "notes.txt", "old": "p", "new": "q"}}
    )
    script = script_file(
        f"<tool_call>\n{call}\n</tool_call>", f"<tool_call>\n{edit}\n</tool_call>", "done"
    )
    out = bosun(
        "run", "patch it", "-m", f"scripted:{script}", "-w", str(workspace), "--output", "jsonl",
        "--approve", "auto-edit", "--tools", "+apply_patch,-edit_file",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    results = [e for e in map(json.loads, out.stdout.splitlines()) if e["type"] == "tool_result"]
    assert not results[0]["is_error"] and results[0]["content"].startswith("Applied the patch")
    assert results[1]["is_error"] and "unknown tool 'edit_file'" in results[1]["content"]
    assert (workspace / "notes.txt").read_text() == "patched\n"


def test_the_grammar_admits_only_patches_that_parse() -> None:
    from agent.protocol.grammar import PATCH_FORMAT
    from agent.tools.patch import apply_patch
    from agent.tools.patch_format import parse_patch
    from tests.gbnf_check import grammar_accepts

    assert apply_patch.parameters["properties"]["input"]["format"] == PATCH_FORMAT
    specs = [t.spec() for t in tool_set(("+apply_patch", "-edit_file", "-write_file"))]
    grammars = profile_for("smollm2-135m").grammars(specs)
    assert grammars is not None
    first = grammars[0]
    good = "*** Begin Patch\n*** Update File: a.py\n@@ def f():\n-    x\n+    y\n*** End Patch"
    bad = "*** Begin Patch\n*** Update File: a.py\nx\n*** End Patch"
    parse_patch(good)

    def call(patch: str) -> str:
        body = json.dumps({"name": "apply_patch", "arguments": {"input": patch}})
        return f"<tool_call>\n{body}\n</tool_call>"

    assert grammar_accepts(first, call(good))
    assert not grammar_accepts(first, call(bad))
    assert not grammar_accepts(first, call("rm -rf /"))


@pytest.fixture
def fixed_workspace() -> Iterator[Path]:
    """A workspace at the same path every run: the system prompt names it, and a greedy
    model's reply follows every token of the prompt (a tmp_path's pytest-N changed it)."""
    import shutil
    import tempfile

    path = Path(tempfile.gettempdir()) / "bosun-fixed-workspace"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.model
def test_smollm2_under_the_grammar_writes_a_patch_that_parses(fixed_workspace: Path) -> None:
    """The real bundled model with only apply_patch offered and --constrain always: any
    call it writes is an apply_patch call whose input parses: the grammar sees to the
    format, and its bounds (line length, lines, hunks) to the patch ending inside the
    reply, where without them SmolLM2 writes one line until the token limit. Whether the
    patch applies to the file is the model's own matter, so that is not asserted."""
    from agent.tools.patch_format import parse_patch

    (fixed_workspace / "hello.py").write_text('def greet():\n    return "hello"\n')
    only = "+apply_patch,-edit_file,-write_file,-read_file,-list_dir,-glob,-grep,-bash"
    out = subprocess.run(
        [
            sys.executable, "-m", "agent", "run",
            'Change hello.py so greet returns "goodbye". Use apply_patch.',
            "--model", "smollm2-135m", "--constrain", "always", "--tools", only,
            "--approve", "auto-edit", "--output", "jsonl", "--max-turns", "1",
            "-w", str(fixed_workspace),
        ],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    said = out.stdout + out.stderr
    assert out.returncode in (0, 3), said[-2000:]
    assert "Traceback" not in said
    events = [json.loads(line) for line in out.stdout.splitlines()]
    calls = [e for e in events if e["type"] == "tool_call"]
    # The grammar's bounds end the patch inside the reply: a call, whose input parses.
    assert calls, said[-2000:]
    for call in calls:
        assert call["name"] == "apply_patch"
        assert parse_patch(call["arguments"]["input"])
