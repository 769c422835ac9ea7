"""The plan in chat: a checklist in place of update_plan's tool panel, ASCII boxes where
the terminal is not UTF-8, the progress in the footer, and `/plan`."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from agent import events as ev
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.session import sessions_dir
from agent.ui import commands
from agent.ui.footer import Footer
from agent.ui.plan import footer_line
from agent.ui.render import Renderer
from tests.helpers import tool_call
from tests.ui.tmux import Terminal, needs_chat, needs_tmux, prompt_ready

STEPS = [
    {"step": "read the failing test", "status": "completed"},
    {"step": "fix the parser", "status": "in_progress"},
    {"step": "run the tests", "status": "pending"},
]


class Ascii(io.StringIO):
    """A terminal whose locale is not UTF-8 (rich reads the file's encoding)."""

    encoding = "ascii"  # type: ignore[assignment]


def console(file: io.StringIO | None = None) -> Console:
    return Console(file=file or io.StringIO(), width=80, height=30, highlight=False)


def shown(c: Console) -> str:
    assert isinstance(c.file, io.StringIO)
    return c.file.getvalue()


def plan_turn(r: Renderer, steps: list[dict[str, str]], explanation: str = "") -> None:
    r(ev.ToolCallEvent("call_1", "update_plan", {"plan": steps}))
    r(ev.ToolResultEvent("call_1", False, "Plan updated"))
    r(ev.PlanUpdated(explanation, steps))
    r.finish_stream()


def test_a_plan_update_is_a_checklist_not_a_tool_panel() -> None:
    c = console()
    plan_turn(Renderer(c, lambda n, a: None), STEPS, "the parser drops the last line")
    lines = shown(c).splitlines()
    assert lines == [
        "  plan 1/3",
        "    the parser drops the last line",
        "    ☑ read the failing test",
        "    ◐ fix the parser",
        "    ☐ run the tests",
    ]


def test_without_utf8_the_boxes_are_ascii() -> None:
    c = console(Ascii())
    plan_turn(Renderer(c, lambda n, a: None), STEPS)
    assert shown(c).splitlines()[1:] == [
        "    [x] read the failing test",
        "    [>] fix the parser",
        "    [ ] run the tests",
    ]


def test_each_update_prints_the_list_again() -> None:
    c = console()
    r = Renderer(c, lambda n, a: None)
    plan_turn(r, STEPS)
    plan_turn(r, [{**s, "status": "completed"} for s in STEPS])
    text = shown(c)
    assert text.count("run the tests") == 2 and "plan 3/3" in text
    assert "update_plan" not in text and "Plan updated" not in text


def test_a_rejected_plan_shows_its_error() -> None:
    c = console()
    r = Renderer(c, lambda n, a: None)
    r(ev.ToolCallEvent("call_1", "update_plan", {"plan": "x"}))
    r(ev.ToolResultEvent("call_1", True, "Error: invalid arguments for update_plan: …"))
    r.finish_stream()
    text = shown(c)
    assert "update_plan (the plan is unchanged)" in text and "invalid arguments" in text


def test_model_text_in_a_step_cannot_drive_the_terminal() -> None:
    c = console()
    plan_turn(Renderer(c, lambda n, a: None), [{"step": "x\x1b[2Jy", "status": "pending"}])
    assert "\x1b" not in shown(c)


def test_the_footer_shows_the_plan_in_place() -> None:
    footer = Footer(lambda: False)
    assert footer.lines() == 1
    footer.plan = lambda: footer_line(ev.PlanUpdated("", STEPS))
    assert footer.lines() == 2
    c = console()
    c.print(footer)
    assert "plan 1/3 · fix the parser" in shown(c)
    assert footer_line(None) == "" and footer_line(ev.PlanUpdated("", [])) == ""


class Repl:
    """What `/plan` uses of the REPL (prompt-toolkit needs a tty)."""

    def __init__(self, chat: ChatSession) -> None:
        self.chat = chat
        self.console = console()
        self.renderer = Renderer(self.console, lambda n, a: None)

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(message, style=style, markup=False)


@pytest.fixture
def chat(workspace: Path, script_file) -> Iterator[ChatSession]:
    script = script_file(tool_call("update_plan", plan=STEPS), "ok")
    session = ChatSession(
        Settings.from_config(Config(model=f"scripted:{script}"), workspace=workspace),
        lambda e: None,
        None,
    )
    session.start_new()
    yield session
    session.close()


def test_slash_plan_shows_the_latest_plan(chat: ChatSession) -> None:
    repl = Repl(chat)
    commands.find("/plan").run(repl, "")  # type: ignore[arg-type]
    assert "no plan yet" in shown(repl.console)
    chat.send("plan it")
    commands.find("/plan").run(repl, "")  # type: ignore[arg-type]
    assert "◐ fix the parser" in shown(repl.console)
    assert "/plan" in commands.COMMANDS


def test_slash_plan_says_when_the_tool_is_off(workspace: Path, script_file) -> None:
    settings = Settings.from_config(
        Config(model=f"scripted:{script_file('ok')}", tools=("-update_plan",)),
        workspace=workspace,
    )
    session = ChatSession(settings, lambda e: None, None)
    try:
        session.start_new()
        repl = Repl(session)
        commands.find("/plan").run(repl, "")  # type: ignore[arg-type]
        assert "--tools +update_plan" in shown(repl.console)
    finally:
        session.close()


@needs_tmux
@needs_chat
def test_chat_shows_the_plan_and_resume_shows_it_again(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    script = script_file(tool_call("update_plan", plan=STEPS), "On it.", "ok")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("fix the parser")
    terminal.send("Enter")
    terminal.wait_for("On it.")
    terminal.wait_for(prompt_ready)
    screen = terminal.scrollback()
    assert "plan 1/3" in screen and "◐ fix the parser" in screen and "☑ read the" in screen
    assert "Plan updated" not in screen  # the checklist, not a tool panel
    terminal.type("/plan")
    terminal.send("Enter")
    terminal.wait_for(lambda s: s.count("◐ fix the parser") == 2)
    terminal.type("/exit")
    terminal.send("Enter")
    terminal.wait_for("[exit 0]")
    (session,) = sessions_dir().glob("*.jsonl")

    again = Terminal(terminal.home)  # a new tmux server: the first one's pane is done
    try:
        again.start("--model", f"scripted:{script}", "--resume", session.stem)
        again.wait_for(prompt_ready)
        screen = again.scrollback()
    finally:
        again.close()
    assert "resumed:" in screen and "◐ fix the parser" in screen and "☐ run the tests" in screen
