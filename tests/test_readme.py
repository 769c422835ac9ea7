"""The commands of the README and the manual (docs/), run as written: the README's first
command (minus the install) on the real model, and every `bosun` command of every
```sh block, as a user would type it, doing what its comment says: an exit code and one
line of output each.

The README and the docs are parsed here, so a command added to a ```sh block without a
case below (or, for one that is not bosun's, a line in ELSEWHERE saying where it runs or
why it cannot) fails `test_every_command_in_the_docs_has_a_case`. The full list of
commands is the first block of docs/usage/commands.md; the README's tour repeats some.
Placeholders become real things: `…` a prompt, `ID` the id of a session made first,
`~/src/proj` a copy of examples/hello, the served model a real llama-cpp-python server
on the bundled model; `bosun chat` runs in a real terminal (tmux); a Slurm array's task
is its environment. Only `contracts check --mutate` is narrowed, to one small contract:
the whole set takes ten minutes and CI runs it anyway.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.session import sessions_dir

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
USAGE = DOCS / "usage" / "commands.md"  # the block with every command
PROMPT = "Read the file README.md and summarise it."
CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def first_command() -> list[str]:
    """The bosun part of the README's first line of commands."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    first = block.splitlines()[0]
    install, _, run = first.partition(" && ")
    assert install == "./install.sh"
    argv = shlex.split(run)
    assert argv[0] == ".venv/bin/bosun"
    return [sys.executable, "-m", "agent", *argv[1:]]


@pytest.mark.model
def test_the_readme_first_command_completes_a_task(bosun_home: Path) -> None:
    proc = subprocess.run(
        [*first_command(), "--output", "jsonl"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-800:]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls and calls[0]["name"] == "read_file"
    assert calls[0]["arguments"] == {"path": "README.md"}
    result = events[-1]
    assert result["type"] == "result" and result["status"] == "done"
    assert result["final_text"].strip()


def command_lines(block: str) -> list[str]:
    """The commands of one ```sh block, comments cut off (at ` # ` only: a `#` inside a
    URL stays)."""
    lines = [re.split(r"\s+#\s", line, maxsplit=1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line]


def sh_blocks(text: str) -> list[str]:
    """Every ```sh block of a Markdown page."""
    return [part.split("```", 1)[0] for part in text.split("```sh\n")[1:]]


def usage_lines() -> list[str]:
    """The commands of the first ```sh block of docs/usage/commands.md."""
    return command_lines(sh_blocks(USAGE.read_text(encoding="utf-8"))[0])


def doc_pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def shown_commands() -> dict[str, list[str]]:
    """Every command of every ```sh block of the README and the docs -> the pages."""
    shown: dict[str, list[str]] = {}
    for page in doc_pages():
        for block in sh_blocks(page.read_text(encoding="utf-8")):
            for line in command_lines(block):
                shown.setdefault(line, []).append(str(page.relative_to(REPO)))
    return shown


@dataclass(frozen=True)
class Case:
    """How one README line is run here: `argv` after `bosun` ({ws}, {id}, {url} filled
    in), what is piped into it, the exit code and a fragment of stdout + stderr."""

    argv: tuple[str, ...]
    code: int = 0
    shows: str = ""
    stdin: str | None = None
    terminal: bool = False  # `bosun chat …`: in tmux
    env: tuple[tuple[str, str], ...] = ()  # set for this command (a Slurm array task's)


ACP_INIT = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
)
SMALL_CONTRACT = str(REPO / "contracts" / "special-tokens-v1.yaml")
# Task 2 of the docs' Slurm array (--array=0-7): shard 3 of 8, which holds t1 (t0 is in 5)
SLURM_TASK_2 = (
    ("SLURM_ARRAY_TASK_ID", "2"),
    ("SLURM_ARRAY_TASK_MIN", "0"),
    ("SLURM_ARRAY_TASK_COUNT", "8"),
)
SCHEDULER_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_COUNT")
SCHEDULER_VARS += ("JOB_COMPLETION_INDEX", "BOSUN_SHARD_COUNT")

CASES: dict[str, tuple[Case, ...]] = {
    "bosun chat": (Case(("chat",), terminal=True),),
    "bosun chat --continue": (Case(("chat", "--continue"), terminal=True, shows="resumed"),),
    "bosun chat --resume": (Case(("chat", "--resume"), terminal=True, shows="resumed"),),
    "bosun chat -y": (Case(("chat", "-y"), terminal=True, shows="auto"),),
    'bosun run "Add a --verbose flag to cli.py" --workspace ~/src/proj --approve auto-edit': (
        Case(
            (
                "run",
                "Add a --verbose flag to cli.py",
                "--workspace",
                "{ws}",
                "--approve",
                "auto-edit",
                "--max-turns",
                "4",
            ),
            code=-1,
        ),
    ),
    "bosun run - < task.txt": (Case(("run", "-"), stdin=PROMPT, shows="→ read_file("),),
    'cat calc.py | bosun run "Summarise this"': (Case(("run", "Summarise this"), stdin=CALC),),
    'bosun run "…" --output jsonl': (
        Case(("run", PROMPT, "--output", "jsonl"), shows='"type": "result"'),
    ),
    'bosun run "…" --trace calls.jsonl': (
        Case(("run", PROMPT, "--trace", "calls.jsonl"), shows="→ read_file("),
    ),
    "bosun run --tasks tasks.jsonl --jobs 4": (
        Case(("run", "--tasks", "tasks.jsonl", "--jobs", "4"), shows='"task"'),
    ),
    "bosun run --tasks tasks.jsonl --shard 1/2 --results out": (
        Case(
            ("run", "--tasks", "tasks.jsonl", "--shard", "1/2", "--results", "out"),
            shows='"shard": "1/2"',
        ),
    ),
    # t0 and t1 are both in shard 1 of 2: shard 2 alone leaves them missing
    "bosun tasks merge out": (
        Case(
            ("run", "--tasks", "tasks.jsonl", "--shard", "2/2", "--results", "half"),
            shows='"tasks": 0',
        ),
        Case(("tasks", "merge", "half"), code=1, shows="(no summary from shard 1/2): t0, t1"),
    ),
    # RAY_ADDRESS unset and no `ray start` here: a cluster of its own for the batch
    "bosun run --tasks tasks.jsonl --executor ray --jobs 2": (
        Case(
            ("run", "--tasks", "tasks.jsonl", "--executor", "ray", "--jobs", "2"),
            shows="model loads per actor",
        ),
    ),
    'bosun run "…" --model openai:http://127.0.0.1:8080/v1#qwen3-coder': (
        Case(("run", PROMPT, "--model", "openai:{url}#smollm2-135m")),
    ),
    "bosun models": (Case(("models",), shows="smollm2-135m"),),
    "bosun models openai:http://127.0.0.1:8080/v1#m": (
        Case(("models", "openai:{url}#smollm2-135m"), shows="context_source"),
    ),
    "bosun render --session ID": (Case(("render", "--session", "{id}"), shows="README.md"),),
    "bosun render": (Case(("render",), shows="a coding agent working in"),),
    "bosun sessions list | show ID [--json]": (
        Case(("sessions", "list"), shows="{id}"),
        Case(("sessions", "show", "{id}"), shows="README.md"),
        Case(("sessions", "show", "{id}", "--json"), shows='"kind"'),
    ),
    "bosun checkpoints list|restore --session ID": (
        # {id} ran read-only, so it took no snapshot: said, and restore has nothing
        Case(("checkpoints", "list", "--session", "{id}"), shows="no snapshots"),
        Case(("checkpoints", "restore", "--session", "{id}"), code=2, shows="no snapshots"),
    ),
    "bosun config": (Case(("config",), shows="approve"),),
    "bosun mcp list": (Case(("mcp", "list"), shows="no MCP servers"),),
    "bosun map --tokens 500": (
        Case(("map", "--tokens", "500"), shows="calc.py:\n  1: def add(a, b):"),
        Case(("map", "--json"), shows='"name": "sub"'),
    ),
    "bosun acp": (Case(("acp",), stdin=ACP_INIT, shows='"loadSession":true'),),
    # stdin ends at once: the server starts, sees its client gone and exits 0
    # (tests/mcp/test_serve.py drives it with the SDK's client)
    "bosun mcp serve": (Case(("mcp", "serve")),),
    "bosun contracts check --mutate": (
        Case(("contracts", "check", "--mutate", SMALL_CONTRACT), shows="mutant(s) killed"),
    ),
    "bosun selftest": (Case(("selftest",), shows="ok"),),
    # -- the other pages' blocks --------------------------------------------------------
    "bosun map src --json": (Case(("map", "src", "--json"), shows='"name": "mul"'),),
    # one task of the array, as Slurm starts it, on a served model
    "sbatch --array=0-7 --wrap 'bosun run --tasks tasks.jsonl --results runs/r1"
    " --model openai:http://gpu:8000/v1#m'": (
        Case(
            (
                "run",
                "--tasks",
                "tasks.jsonl",
                "--results",
                "runs/r1",
                "--model",
                "openai:{url}#smollm2-135m",
            ),
            env=SLURM_TASK_2,
            shows='"shard": "3/8"',
        ),
    ),
    "bosun tasks merge runs/r1": (
        Case(("run", "--tasks", "tasks.jsonl", "--results", "runs/r1"), env=SLURM_TASK_2),
        Case(("tasks", "merge", "runs/r1"), code=1, shows="(no summary from shard 5/8): t0"),
    ),
    "bosun run --tasks tasks.jsonl --executor ray --jobs 8 --results r1": (
        Case(
            (
                "run",
                "--tasks",
                "tasks.jsonl",
                "--executor",
                "ray",
                "--jobs",
                "8",
                "--results",
                "r1",
            ),
            shows='"task"',
        ),
    ),
    # r1 from the line above where it ran first; else made here (a rerun skips done tasks)
    "bosun tasks merge r1": (
        Case(("run", "--tasks", "tasks.jsonl", "--results", "r1"), shows='"type": "summary"'),
        Case(("tasks", "merge", "r1"), shows='"missing": 0'),
    ),
    # no collector listens there: one warning, and the run is as without it
    'OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 bosun run "…"': (
        Case(
            ("run", PROMPT),
            env=(("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),),
            shows="OpenTelemetry: cannot send spans",
        ),
    ),
}

# The commands shown that are not bosun's own, or not runnable here: where each is run
# (a test, or `.ci/run`, checked below), or, after "not run:", why not.
ELSEWHERE: dict[str, str] = {
    './install.sh && .venv/bin/bosun run "Read the file README.md and summarise it."'
    " --workspace examples/hello --approve read-only": (
        "tests/test_readme.py::test_the_readme_first_command_completes_a_task"
    ),
    "./install.sh --dev && .venv/bin/python -m pytest -q": ".ci/run",
    "./install.sh --dev": ".ci/run",
    ".venv/bin/python -m pytest -q": ".ci/run",
    '.venv/bin/python -m pytest -q -m "not model"': (
        "not run: a part of the tests `.ci/run` runs, without those that load a model"
    ),
    ".venv/bin/ruff check . && .venv/bin/ruff format --check .": ".ci/run",
    ".venv/bin/mkdocs build --strict": ".ci/run",
    ".venv/bin/python docs/gen_reference.py": (
        "tests/test_docs.py::test_the_generated_reference_is_current"
    ),
    "ray start --head": (
        "not run: it starts a lasting cluster; the Ray cases above make one of their own"
    ),
    "claude mcp add bosun -- bosun mcp serve --model qwen2.5-coder-7b.gguf": (
        "not run: Claude Code's own command, and a 7B model; `bosun mcp serve` is run above"
    ),
    "bench/eval/setup_peer.sh": "not run: the peer harness of the evaluation, a download",
    ".venv/bin/python bench/eval/run.py --model smollm2-135m --jobs 1": (
        "not run: the whole evaluation takes about an hour on 2 cores"
    ),
}


def test_every_usage_line_has_a_case() -> None:
    lines = usage_lines()
    assert len(lines) >= 15, lines
    assert not set(lines) - set(CASES), set(lines) - set(CASES)


def test_every_command_in_the_docs_has_a_case() -> None:
    """Every command shown in a ```sh block is run here, or ELSEWHERE says where (or why
    not); and no case or entry is left over from a command the docs no longer show."""
    shown = shown_commands()
    missing = {line: pages for line, pages in shown.items() if line not in {**CASES, **ELSEWHERE}}
    assert not missing, f"commands shown with no case in tests/test_readme.py: {missing}"
    assert not set(CASES) & set(ELSEWHERE)
    stale = (set(CASES) | set(ELSEWHERE)) - set(shown)
    assert not stale, f"cases for commands the docs no longer show: {stale}"


@pytest.mark.parametrize("line", sorted(ELSEWHERE))
def test_a_command_run_elsewhere_is_run_there(line: str) -> None:
    where = ELSEWHERE[line]
    if where == ".ci/run":
        ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
        for part in line.split(" && "):
            assert part in ci, f"{part!r} is not in .ci/run"
    elif where.startswith("tests/"):
        path, _, name = where.partition("::")
        assert f"def {name}(" in (REPO / path).read_text(encoding="utf-8"), where
    else:
        assert where.startswith("not run: ") and len(where) > 20, where


# --- running them ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One folder the whole README runs in: examples/hello with calc.py, a tasks file,
    a session made by the first command, and the served model's URL once it is up."""
    root = tmp_path_factory.mktemp("readme")
    ws = root / "proj"
    shutil.copytree(REPO / "examples" / "hello", ws)
    (ws / "calc.py").write_text(CALC, encoding="utf-8")
    (ws / "cli.py").write_text("import sys\n\nprint(sys.argv[1:])\n", encoding="utf-8")
    (ws / "src").mkdir()
    (ws / "src" / "util.py").write_text("def mul(a, b):\n    return a * b\n", encoding="utf-8")
    tasks = [{"id": f"t{i}", "prompt": PROMPT, "approve": "read-only"} for i in range(2)]
    (ws / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    yield {"ws": str(ws), "home": str(root / "home")}


def bosun(place: dict[str, str], case: Case, **extra: str) -> subprocess.CompletedProcess[str]:
    values = {**place, **extra}
    argv = [arg.format(**values) for arg in case.argv]
    env = {**os.environ, "BOSUN_HOME": place["home"], "NO_COLOR": "1", "COLUMNS": "120"}
    for name in SCHEDULER_VARS:  # a shard is a case's own choice, never the runner's
        env.pop(name, None)
    env.update(case.env)
    # `--executor ray` starts a cluster of its own, whose token stays out of ~/.ray
    env.pop("RAY_ADDRESS", None)
    token = Path(place["home"]) / "ray_auth_token"
    if not token.exists():
        token.parent.mkdir(parents=True, exist_ok=True)
        token.write_text(secrets.token_hex(32))
    env["RAY_AUTH_TOKEN_PATH"] = str(token)
    return subprocess.run(
        [sys.executable, "-m", "agent", *argv],
        cwd=place["ws"],
        input=case.stdin if case.stdin is not None else "",
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def first_session(place: dict[str, str]) -> str:
    """The id of a session in the workspace, made by a `bosun run` if there is none."""
    os.environ["BOSUN_HOME"] = place["home"]  # sessions_dir() reads it
    found = sorted(sessions_dir().glob("*.jsonl"))
    if not found:
        made = bosun(place, Case(("run", PROMPT, "--approve", "read-only")))
        assert made.returncode == 0, made.stdout + made.stderr
        found = sorted(sessions_dir().glob("*.jsonl"))
    return found[0].stem


HEADLESS = [line for line, cases in CASES.items() if not cases[0].terminal]


@pytest.mark.model
@pytest.mark.parametrize("line", HEADLESS)
def test_a_readme_command_runs_as_written(
    line: str, place: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BOSUN_HOME", place["home"])
    extra = {"id": first_session(place)}
    served = contextlib.nullcontext("")
    if "openai:" in line:
        from tests.openai_servers import llama_server

        served = llama_server(tmp_path / "server.log")
    with served as url:
        outs = [(case, bosun(place, case, url=url, **extra)) for case in CASES[line]]
    for case, out in outs:
        said = out.stdout + out.stderr
        if case.code >= 0:
            assert out.returncode == case.code, f"{line}: exit {out.returncode}\n{said[-3000:]}"
        else:  # what a 135M model makes of a real change is its own: any ordinary end
            assert out.returncode in (0, 3, 4), f"{line}: exit {out.returncode}\n{said[-3000:]}"
        assert "Traceback" not in said and "internal error" not in said, said[-3000:]
        if case.argv[0] == "run" and "--tasks" not in case.argv and "jsonl" not in case.argv:
            assert out.stdout.strip(), f"{line}: no answer on stdout\n{said[-3000:]}"
        wanted = case.shows.format(**{**place, **extra})
        assert wanted in said, f"{line}: {wanted!r} not in\n{said[-3000:]}"


@pytest.mark.model
@pytest.mark.parametrize("line", [line for line in CASES if line not in HEADLESS])
def test_a_readme_chat_command_opens_and_closes(
    line: str, place: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.ui.tmux import TMUX, Terminal, prompt_ready

    if TMUX is None:
        pytest.skip("tmux is not installed")
    monkeypatch.setenv("BOSUN_HOME", place["home"])
    first_session(place)
    [case] = CASES[line]
    terminal = Terminal(Path(place["home"]), width=110, height=35)
    try:
        # in the workspace, as typed there: chat's own cwd is the workspace
        args = [*case.argv[1:], "--workspace", place["ws"]]
        terminal.start(*args)
        if "--resume" in args:
            terminal.wait_for("Resume which", 120)
            time.sleep(0.6)
            terminal.send("Enter")
        screen = terminal.wait_for(prompt_ready, 120)
        assert case.shows in screen, screen
        terminal.send("C-d")
        terminal.wait_for("[exit 0]", 30)
    finally:
        terminal.close()


def test_the_usage_block_is_parsed_as_written() -> None:
    """The parser cuts comments at ` # ` only: a `#` inside a URL stays."""
    assert any("#qwen3-coder" in line for line in usage_lines())
    assert all(shlex.split(line.replace("…", "x"))[0] in ("bosun", "cat") for line in usage_lines())
    readme = shown_commands()
    tour = [line for line, pages in readme.items() if "README.md" in pages]
    assert len(tour) >= 8 and set(tour) <= set(CASES) | set(ELSEWHERE), tour
