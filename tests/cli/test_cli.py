"""The command line as a user meets it: real subprocesses, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import tool_call

BOSUN = [sys.executable, "-m", "agent"]


def bosun(*args: str, cwd: Path | None = None, stdin: str | None = None):
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    return subprocess.run(
        [*BOSUN, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        input=stdin,
        env=env,
        timeout=120,
    )


def test_help_and_version() -> None:
    top = bosun("--help")
    assert top.returncode == 0 and "run" in top.stdout
    sub = bosun("run", "--help")
    assert sub.returncode == 0 and "--trace" in sub.stdout and "--approve" in sub.stdout
    version = bosun("--version")
    assert version.returncode == 0 and version.stdout.startswith("bosun 0.")


def test_help_does_not_import_heavy_backends() -> None:
    code = (
        "import sys, agent.cli.main, agent.run.headless, agent.run.chat, agent.run.acp;"
        " import agent.run.assemble, agent.run.telemetry, agent.run.batch, agent.run.config;"
        " print([m in sys.modules for m in"
        " ('llama_cpp', 'openai', 'mcp', 'opentelemetry', 'acp', 'ray', 'tree_sitter',"
        " 'tree_sitter_language_pack', 'drivers.llama_cpp')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == str([False] * 9), out.stderr


def test_scripted_three_turn_session_jsonl(workspace: Path, script_file, tmp_path: Path) -> None:
    script = script_file(
        {
            "chunks": [
                "Let me ",
                "look.\n<tool_",
                "call>" + tool_call("read_file", path="notes.txt")[11:],
            ]
        },
        "It says hello from bosun.",
    )
    trace = tmp_path / "trace.jsonl"
    proc = bosun(
        "run",
        "What does notes.txt say?",
        "--model",
        f"scripted:{script}",
        "--workspace",
        str(workspace),
        "--output",
        "jsonl",
        "--trace",
        str(trace),
    )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [
        t
        for i, t in enumerate(e["type"] for e in events)
        if i == 0 or t != "text" or events[i - 1]["type"] != "text"
    ]  # text arrives as deltas
    assert types == [
        "session",
        "text",
        "turn",
        "tool_call",
        "tool_result",
        "text",
        "turn",
        "result",
    ]
    assert events[0]["workspace"] == str(workspace.resolve())
    events = [e for i, e in enumerate(events) if not (e["type"] == "text" == events[i - 1]["type"])]
    assert events[3] == {
        "type": "tool_call",
        "id": "call_1",
        "name": "read_file",
        "arguments": {"path": "notes.txt"},
        "salvaged": False,
    }
    assert events[4]["is_error"] is False and "hello from bosun" in events[4]["content"]
    result = events[-1]
    assert result["status"] == "done" and result["turns"] == 2 and result["tool_calls"] == 1
    assert result["final_text"] == "It says hello from bosun."
    calls = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(calls) == 2
    assert all({"model", "prompt", "completion", "usage"} <= set(c) for c in calls)
    assert calls[1]["completion"] == "It says hello from bosun."
    assert calls[1]["prompt"].startswith(calls[0]["prompt"])


def test_text_output_keeps_stdout_for_the_answer(workspace: Path, script_file) -> None:
    script = script_file(tool_call("list_dir"), "Two files.")
    proc = bosun("run", "-", "-m", f"scripted:{script}", "-w", str(workspace), stdin="list")
    assert proc.returncode == 0
    assert proc.stdout == "Two files.\n"
    assert "→ list_dir()" in proc.stderr


def test_budget_exit_code(workspace: Path, script_file) -> None:
    script = script_file(*[tool_call("list_dir", path=".")] * 3)
    proc = bosun("run", "x", "-m", f"scripted:{script}", "-w", str(workspace), "--output", "jsonl")
    assert proc.returncode == 3
    assert json.loads(proc.stdout.splitlines()[-1])["status"] == "stuck"


def test_session_file_holds_the_structured_history(
    workspace: Path, script_file, bosun_home: Path
) -> None:
    from agent.history import AssistantToolUse, ToolResult
    from agent.session import load_messages

    script = script_file(tool_call("list_dir"), "ok")
    assert bosun("run", "x", "-m", f"scripted:{script}", "-w", str(workspace)).returncode == 0
    (path,) = (bosun_home / "sessions").glob("*.jsonl")
    history = load_messages(path)
    assert [type(m).__name__ for m in history] == [
        "System",
        "User",
        "AssistantToolUse",
        "ToolResult",
        "Assistant",
    ]
    assert isinstance(history[2], AssistantToolUse) and isinstance(history[3], ToolResult)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "scripted:/nonexistent/script.jsonl"], "scripted model file not found"),
        (["--model", "bogus:thing"], "unknown model scheme 'bogus'"),
        (["--model", "/no/such/model.gguf"], "model file not found: /no/such/model.gguf"),
        (["--workspace", "/no/such/dir"], "workspace does not exist"),
        (["--max-turns", "0"], "--max-turns"),
        (["--approve", "sometimes"], "--approve"),
        (["--frobnicate"], "no such option: --frobnicate (see"),  # nothing unrelated offered
        (["--aprove", "auto"], "no such option: --aprove; did you mean --approve?"),
        (["--approve", "yolo"], "'yolo' is not one of 'ask', 'auto-edit', 'auto', 'read-only'"),
        (["--ablate", "salvage,grammar"], "--ablate: unknown grammar"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, workspace: Path, script_file
) -> None:
    script = script_file("hi")
    base = ["run", "hello", "-m", f"scripted:{script}", "-w", str(workspace)]
    proc = bosun(*base, *args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and message in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("bosun: error: ")
    assert "Value error" not in proc.stderr and "Possible options" not in proc.stderr


def test_malformed_script_line_names_file_and_line(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "bad.jsonl"
    script.write_text('{"completion": "a"}\n{"completion": \n', encoding="utf-8")
    proc = bosun("run", "x", "-m", f"scripted:{script}", "-w", str(workspace))
    assert proc.returncode == 2
    assert f"{script}:2: not valid JSON" in proc.stderr and proc.stderr.count("\n") == 1


def test_empty_prompt_is_a_usage_error(workspace: Path, script_file) -> None:
    proc = bosun("run", "-", "-m", f"scripted:{script_file('x')}", "-w", str(workspace), stdin="")
    assert proc.returncode == 2 and "prompt is empty" in proc.stderr


def test_models_lists_the_bundled_model() -> None:
    proc = bosun("models", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    smol = next(r for r in rows if r["model"] == "smollm2-135m")
    assert smol["template"] == "templates/chatml.jinja" and smol["tool_format"] == "hermes"
    assert "shipped template chatml" in smol["adaptations"]


def test_models_rejects_a_missing_or_corrupt_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"nope")
    for arg in (str(tmp_path / "absent.gguf"), str(bad)):
        proc = bosun("models", arg)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_sessions_show_and_render_replay_a_run(workspace: Path, script_file) -> None:
    script = script_file(tool_call("list_dir"), "ok")
    assert bosun("run", "look", "-m", f"scripted:{script}", "-w", str(workspace)).returncode == 0
    listing = bosun("sessions", "list")
    session_id = listing.stdout.splitlines()[1].split("\t")[0]
    assert listing.stdout.splitlines()[0].split("\t") == [
        "id",
        "when",
        "model",
        "status",
        "workspace",
        "prompt",
    ]
    assert listing.stdout.splitlines()[-1].split("\t")[3] == "done"
    shown = bosun("sessions", "show", session_id, "--json").stdout.splitlines()
    assert [json.loads(line)["kind"] for line in shown][1:] == [
        "user",
        "assistant_tool_use",
        "tool_result",
        "assistant",
    ]
    markdown = bosun("sessions", "show", session_id).stdout
    assert markdown.startswith("## User\n\nlook\n")
    assert "### Tool call `list_dir`" in markdown and markdown.endswith("## Assistant\n\nok\n")
    prompt = bosun("render", "--session", session_id, "-m", f"scripted:{script}").stdout
    assert '<tool_call>\n{"name": "list_dir", "arguments": {}}\n</tool_call>' in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_render_with_no_argument_shows_a_new_sessions_first_prompt(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Always answer in French.\n")
    proc = bosun("render", "-w", str(workspace))
    assert proc.returncode == 0, proc.stderr
    assert "Always answer in French." in proc.stdout and '"name": "read_file"' in proc.stdout
    assert proc.stdout.endswith("(your task)<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "show", "no-such-id"],
        ["render", "--session", "x", "--messages", "m.json"],
        ["render", "--messages", "/no/file.json"],
    ],
)
def test_inspection_commands_fail_cleanly(args: list[str]) -> None:
    proc = bosun(*args)
    assert proc.returncode == 2 and proc.stderr.startswith("bosun: error: ")
    assert "Traceback" not in proc.stderr


def test_speculate_takes_auto_or_off(workspace: Path, script_file) -> None:
    script = script_file("Done.")
    for mode in ("auto", "on", "off"):
        proc = bosun(
            "run", "hi", "--model", f"scripted:{script}", "--workspace", str(workspace),
            "--speculate", mode,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    bad = bosun("run", "hi", "--model", f"scripted:{script}", "--speculate", "always")
    assert bad.returncode == 2 and "--speculate" in bad.stderr
