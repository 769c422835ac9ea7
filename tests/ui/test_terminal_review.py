"""Findings of the terminal review not covered by the REPL tests, in a real terminal
(tmux): the second bundled model asks before it is joined into the cache and keeps
llama.cpp's log out of the chat; Ctrl-C while a long prompt is still being evaluated
stops it; piped text joins the prompt; the listing commands fit 80 columns."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.history import User
from agent.session import load_messages, sessions_dir
from tests.helpers import needs_gemma, tool_call
from tests.ui.tmux import REPO, Terminal, needs_chat, needs_tmux, prompt_ready

pytestmark = [needs_tmux, needs_chat]

# What llama.cpp writes to stderr when nothing catches it, and a Gemma turn's markers.
LOG_LINES = ("llama_", "ggml_", "load_tensors", "llama_model_loader", "print_info")
TURN_MARKERS = ("<start_of_turn>", "<end_of_turn>", "<eos>", "<bos>")


def send(terminal: Terminal, text: str) -> int:
    """Type a line and press Enter; returns where the scrollback stood before."""
    start = len(terminal.scrollback())
    terminal.type(text)
    terminal.send("Enter")
    return start


@needs_gemma
@pytest.mark.model
def test_switching_to_gemma_asks_first_and_keeps_llama_logs_out(
    terminal: Terminal, workspace: Path, script_file, tmp_path: Path, monkeypatch, bosun_home: Path
) -> None:
    """Finding 3: `/model gemma3-270m` used to write 253 MB into the cache unasked and
    print llama.cpp's log line into the chat, and its replies showed turn markers."""
    cache = tmp_path / "fresh-cache"
    monkeypatch.setenv("BOSUN_CACHE", str(cache))  # the terminal's bosun inherits it
    script = script_file("unused")
    terminal.start(
        "--model", f"scripted:{script}", "--workspace", str(workspace), "--constrain", "never"
    )  # fmt: skip
    terminal.wait_for(prompt_ready)

    send(terminal, "/model gemma3-270m")
    screen = terminal.wait_for("Go ahead? [y]es / [n]o")
    assert "253 MB" in screen and str(cache) in screen.replace("\n", "")
    time.sleep(0.6)  # a key typed at once would be type-ahead, not an answer
    terminal.send("n")  # one key, as every question: no Enter
    terminal.wait_for("gemma3-270m not loaded")
    terminal.wait_for(prompt_ready)
    assert not (cache / "models").exists() or not any((cache / "models").iterdir())

    start = send(terminal, "/model gemma3-270m")
    terminal.wait_for("Go ahead? [y]es / [n]o", after=start)  # this time's, not the first
    time.sleep(0.6)
    terminal.send("y")
    # progress while the parts are joined and the model loads: never a silent screen
    terminal.wait_for(lambda s: "joining gemma3-270m" in s or "loading gemma3-270m" in s, 30)
    terminal.wait_for("model: gemma3-270m", timeout=180)
    terminal.wait_for(prompt_ready)
    start = send(terminal, "Say hello in one short sentence.")
    terminal.wait_for(lambda s: prompt_ready(s) and "tok/s" in s, 120, after=start)
    screen = terminal.scrollback()
    assert not [line for line in screen.splitlines() if line.startswith(LOG_LINES)], screen
    assert not any(marker in screen for marker in TURN_MARKERS), screen
    log = bosun_home / "logs" / "llama.log"
    assert "gemma3" in log.read_text(errors="replace")  # llama.cpp's log went here instead
    terminal.send("C-d")
    terminal.wait_for("[exit 0]", 30)
    [path] = sorted(sessions_dir().glob("*.jsonl"))
    replies = [m for m in load_messages(path) if type(m).__name__ == "Assistant"]
    assert replies and not any(m in r.content for r in replies for m in TURN_MARKERS)  # type: ignore[attr-defined]


@pytest.mark.model
def test_ctrl_c_while_a_long_prompt_is_evaluated_stops_it_at_once(
    terminal: Terminal, workspace: Path
) -> None:
    """Finding 6: Ctrl-C while the prompt was still being evaluated took seconds (the
    whole prompt) with the spinner still spinning. A ~6,000-token prompt takes the real
    SmolLM2 tens of seconds on 2 cores; the stop must come long before that."""
    lines = "".join(f"{n:05d} the quick brown fox jumps over the lazy dog\n" for n in range(600))
    (workspace / "big.txt").write_text(lines)  # ~6,000 tokens, under the 64 kB mention cap
    terminal.start(
        "--model", "smollm2-135m", "--workspace", str(workspace), "--context-size", "16384"
    )
    terminal.wait_for(prompt_ready, timeout=90)
    send(terminal, "Summarise @big.txt")
    terminal.wait_for("working…", 10)
    time.sleep(1.0)  # well into the prompt's evaluation
    asked = time.monotonic()
    terminal.send("C-c")
    terminal.wait_for("stopped (interrupted)", 30)
    took = time.monotonic() - asked
    terminal.wait_for(prompt_ready)
    assert took < 5, f"the stop took {took:.1f} s"
    terminal.send("C-d")
    terminal.wait_for("[exit 0]", 30)
    [path] = sorted(sessions_dir().glob("*.jsonl"))
    history = load_messages(path)
    assert type(history[-1]).__name__ == "User"  # nothing was generated for it


def test_piped_text_joins_the_prompt_on_a_terminal(
    terminal: Terminal, workspace: Path, script_file, tmp_path: Path
) -> None:
    """Finding 7: `cat calc.py | bosun run "Summarise this code"` ignored the file."""
    code = tmp_path / "calc.py"
    code.write_text("def add(a, b):\n    return a + b\n")
    script = script_file("It adds two numbers.")
    terminal.start(
        "Summarise this code", "--model", f"scripted:{script}", "--workspace", str(workspace),
        command="run", pipe_from=code,
    )  # fmt: skip
    screen = terminal.wait_for("[exit 0]")
    assert "It adds two numbers." in screen
    [path] = sorted(sessions_dir().glob("*.jsonl"))
    [task] = [m.content for m in load_messages(path) if isinstance(m, User)]
    assert task.startswith("Summarise this code") and "return a + b" in task


def test_listings_fit_80_columns_and_say_when_and_how_it_ended(
    workspace: Path, script_file, bosun_home: Path
) -> None:
    """Finding 8: `sessions list` had no date or status, `contracts check` printed
    179-column lines on an 80-column terminal, and an unknown config key was ignored."""
    script = script_file(tool_call("list_dir"), "Listed.")
    run = [sys.executable, "-m", "agent", "run", "look [/bold] around"]
    run += ["-m", f"scripted:{script}", "-w", str(workspace)]
    assert subprocess.run(run, capture_output=True, cwd=REPO, timeout=60).returncode == 0

    def shown(*args: str, command: str, exit_code: int = 0, timeout: float = 20) -> str:
        """The screen of `bosun COMMAND ARGS` in a terminal of its own (a tmux server
        just killed may still be going away, so a socket is never reused)."""
        term = Terminal(bosun_home)
        try:
            term.start(*args, command=command)
            return term.wait_for(f"[exit {exit_code}]", timeout)
        finally:
            term.close()

    screen = shown("list", command="sessions")
    lines = screen.splitlines()  # wrapped lines are joined again: a long one shows
    [header] = [line for line in lines if line.split()[:2] == ["id", "when"]]
    assert "status" in header and "done" in screen and "[/bold]" in screen
    assert max(len(line.rstrip()) for line in lines) <= 80, screen

    screen = shown(
        "check", "contracts/toolcall-retention-v1.yaml", command="contracts", timeout=120
    )
    assert "FALSIFY-" in screen
    assert max(len(line.rstrip()) for line in screen.splitlines()) <= 80, screen

    (workspace / ".bosun.toml").write_text('aprove = "auto"\n')
    screen = shown("-w", str(workspace), command="config", exit_code=2)
    assert "unknown setting 'aprove' (did you mean 'approve'?)" in screen.replace("\n", "")
