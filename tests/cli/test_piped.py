"""`cat file | bosun run "PROMPT"`: the piped text joins the prompt, and an open pipe
with nothing in it cannot hang a run."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from agent.cli.piped import MAX_PIPED, piped_text, with_piped


def test_piped_text_reaches_the_model_with_the_prompt(
    workspace: Path, script_file, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    cmd = [sys.executable, "-m", "agent", "run", "Summarise this code", "--trace", str(trace)]
    cmd += ["--model", f"scripted:{script_file('It adds.')}", "--workspace", str(workspace)]
    proc = subprocess.run(
        cmd, input="def add(a, b):\n    return a + b\n", capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    prompt = json.loads(trace.read_text().splitlines()[0])["prompt"]
    assert "Summarise this code\n\nPiped input:\ndef add(a, b):\n    return a + b\n" in prompt


def test_an_open_empty_pipe_is_given_up_on(capsys) -> None:
    read, write = os.pipe()
    try:
        with os.fdopen(read, "rb", closefd=False) as stream:
            started = time.monotonic()
            assert piped_text(stream, wait=0.3) is None
            assert time.monotonic() - started < 2
    finally:
        os.close(read)
        os.close(write)
    assert "nothing in it after 0.3 s" in capsys.readouterr().err


def test_big_input_is_cut_and_said_so(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * (MAX_PIPED + 10))
    with path.open("rb") as stream:
        text = piped_text(stream)
    assert text is not None and text.endswith("piped input cut at 256 kB]")
    assert with_piped("p", None) == "p" and with_piped("p", " \n") == "p"


def test_a_terminal_or_dev_null_is_not_input() -> None:
    with open(os.devnull, "rb") as null:
        assert piped_text(null) is None
    assert piped_text(io.BytesIO(b"no fileno")) is None
