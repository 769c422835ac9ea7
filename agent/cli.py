"""The `bosun` command. Thin: parse options, build objects, hand over.

Every failure a user can cause ends in one line on stderr and a documented exit code
(2 for usage errors); no traceback reaches the terminal unless BOSUN_DEBUG is set.
"""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

try:  # typer >= 0.20 vendors click privately; older releases use click itself
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from click import exceptions as click_exc  # type: ignore[no-redef]

from agent import __version__

EXIT_USAGE = 2


class Output(StrEnum):
    text = "text"
    jsonl = "jsonl"


class Approve(StrEnum):
    ask = "ask"
    auto_edit = "auto-edit"
    auto = "auto"
    read_only = "read-only"


class Api(StrEnum):
    chat = "chat"
    completions = "completions"


class Constrain(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


class Sandbox(StrEnum):
    auto = "auto"
    on = "on"
    off = "off"


SANDBOX_HELP = "bash in bubblewrap: auto (where it works), on (or exit 2), off."
NET_HELP = "Give the sandbox the network."
GIT_HELP = "Let sandboxed commands write the workspace's .git/ (hooks, config)."


class BosunApp(typer.Typer):
    """Typer, with bosun's error policy applied around every command."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from agent.errors import DriverError, UsageError

        try:
            code = super().__call__(*args, standalone_mode=False, **kwargs)
        except click_exc.NoArgsIsHelpError as exc:
            sys.stderr.write((exc.ctx.get_help() if exc.ctx else "") + "\n")
            code = EXIT_USAGE
        except click_exc.UsageError as exc:
            cmd = exc.ctx.command_path if exc.ctx else "bosun"
            _fail(f"{exc.format_message()} (see '{cmd} --help')", EXIT_USAGE)
        except click_exc.ClickException as exc:
            _fail(exc.format_message(), 1)
        except UsageError as exc:
            _fail(str(exc), EXIT_USAGE)
        except DriverError as exc:
            _fail(str(exc), 1)
        except (KeyboardInterrupt, typer.Abort):
            _fail("interrupted", 130)
        except Exception as exc:
            if os.environ.get("BOSUN_DEBUG"):
                raise
            _fail(f"internal error: {type(exc).__name__}: {exc} (BOSUN_DEBUG=1 shows more)", 1)
        sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"bosun: error: {message}\n")
    sys.exit(code)


app = BosunApp(
    name="bosun",
    help="An agentic coding harness for local models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"bosun {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """bosun drives GGUF models in process or any OpenAI-compatible server."""


ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="GGUF path, bundled name (smollm2-135m), openai:URL#MODEL or scripted:FILE.jsonl.",
    ),
]
WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Folder the agent works in (default: current)."),
]


ABLATIONS = ("salvage", "retention")


def _ablations(value: str) -> frozenset[str]:
    """`--ablate salvage,retention` -> the parts of bosun to turn off (bench/eval)."""
    names = frozenset(part.strip() for part in value.split(",") if part.strip())
    unknown = sorted(names - set(ABLATIONS))
    if unknown:
        _fail(
            f"--ablate: unknown {', '.join(unknown)} (choose from {', '.join(ABLATIONS)})",
            EXIT_USAGE,
        )
    return names


@app.command()
def run(
    prompt: Annotated[str | None, typer.Argument(help="The task; '-' reads it from stdin.")] = None,
    model: ModelOpt = "smollm2-135m",
    workspace: WorkspaceOpt = None,
    output: Annotated[Output, typer.Option(help="text for people, jsonl for scripts.")] = (
        Output.text
    ),
    max_turns: Annotated[int, typer.Option(min=1, help="Most model calls in this run.")] = 30,
    approve: Annotated[
        Approve, typer.Option(help="Which tools may run without asking.")
    ] = Approve.ask,
    constrain: Annotated[
        Constrain, typer.Option(help="Grammar-constrained tool calls.")
    ] = Constrain.auto,
    trace: Annotated[
        Path | None, typer.Option(help="Append every exact prompt and completion to FILE.")
    ] = None,
    tasks: Annotated[
        Path | None,
        typer.Option(help="Run every task in FILE.jsonl ('-': stdin), JSONL out, tagged by task."),
    ] = None,
    jobs: Annotated[
        int, typer.Option(min=1, help="Tasks at once with --tasks (the backend may allow fewer).")
    ] = 1,
    api: Annotated[
        Api | None,
        typer.Option(
            "--api",
            "--wire",  # its earlier name, still accepted
            help="openai: models only: chat (server template and tool parser, the default)"
            " or completions (bosun renders the prompt).",
        ),
    ] = None,
    context_size: Annotated[
        int | None,
        typer.Option(
            "--context-size",
            min=256,
            help="Context window in tokens; long runs compact to stay inside it.",
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            help="With --tasks: a bad line refuses the whole file (exit 2) instead of"
            " failing on its own while the other lines run."
        ),
    ] = False,
    ablate: Annotated[
        str,
        typer.Option(
            hidden=True,
            help="Evaluation only: turn off 'salvage' and/or 'retention' (comma-separated).",
        ),
    ] = "",
    sandbox: Annotated[Sandbox, typer.Option(help=SANDBOX_HELP)] = Sandbox.auto,
    allow_net: Annotated[bool, typer.Option("--allow-net", help=NET_HELP)] = False,
    allow_git_writes: Annotated[bool, typer.Option("--allow-git-writes", help=GIT_HELP)] = False,
) -> None:
    """Run one task headless and exit: 0 done, 1 error, 2 usage, 3 budget/stuck, 130 ^C.

    With --tasks: every task, concurrently; exit 1 when any task did not finish "done"
    (a bad line of the file counts as a failed task, tagged "line N", unless --strict).
    """
    ablations = _ablations(ablate)
    if tasks is not None and prompt is not None:
        _fail("give a PROMPT or --tasks FILE, not both", EXIT_USAGE)
    from agent.tools.sandbox import resolve_sandbox

    policy = resolve_sandbox(sandbox.value, allow_net=allow_net, allow_git_writes=allow_git_writes)
    if tasks is not None:
        from agent.batch import BatchOptions, run_tasks

        code = run_tasks(
            BatchOptions(
                tasks=tasks,
                model=model,
                workspace=workspace if workspace is not None else Path.cwd(),
                jobs=jobs,
                max_turns=max_turns,
                approve=approve.value,
                constrain=constrain.value,
                trace=trace,
                api=api.value if api is not None else None,
                context_size=context_size,
                strict=strict,
                ablate=ablations,
                sandbox=policy,
            )
        )
        raise typer.Exit(code)
    from agent.headless import RunOptions, run_once

    if prompt is None:
        _fail("give a PROMPT ('-' reads it from stdin) or --tasks FILE", EXIT_USAGE)
    if prompt == "-":
        prompt = sys.stdin.read()
    if not prompt.strip():
        _fail("the prompt is empty", EXIT_USAGE)
    code = run_once(
        RunOptions(
            prompt=prompt,
            model=model,
            workspace=workspace if workspace is not None else Path.cwd(),
            output=output.value,
            max_turns=max_turns,
            approve=approve.value,
            constrain=constrain.value,
            trace=trace,
            api=api.value if api is not None else None,
            context_size=context_size,
            ablate=ablations,
            sandbox=policy,
        )
    )
    raise typer.Exit(code)


@app.command()
def chat(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="GGUF path, bundled name, openai:URL#MODEL or scripted:FILE.jsonl"
            " (default: config.toml, else smollm2-135m).",
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    approve: Annotated[
        Approve | None, typer.Option(help="Which tools may run without asking.")
    ] = None,
    constrain: Annotated[
        Constrain | None, typer.Option(help="Grammar-constrained tool calls.")
    ] = None,
    resume: Annotated[
        str | None, typer.Option("--resume", help="Continue session ID (or a prefix of it).")
    ] = None,
    continue_: Annotated[
        bool,
        typer.Option("--continue", "-c", help="Continue the latest session in this workspace."),
    ] = False,
    show_reasoning: Annotated[
        bool, typer.Option("--show-reasoning", help="Show the model's reasoning as it streams.")
    ] = False,
    context_size: Annotated[
        int | None, typer.Option("--context-size", min=256, help="Context window in tokens.")
    ] = None,
    sandbox: Annotated[
        Sandbox | None, typer.Option(help=SANDBOX_HELP + " Default: config, else auto.")
    ] = None,
    allow_net: Annotated[bool | None, typer.Option("--allow-net", help=NET_HELP)] = None,
    allow_git_writes: Annotated[
        bool | None, typer.Option("--allow-git-writes", help=GIT_HELP)
    ] = None,
) -> None:
    """Talk to the agent in a terminal: streamed answers, tool calls, diffs, approvals."""
    from agent.ui.app import chat_command

    code = chat_command(
        model,
        workspace,
        approve.value if approve is not None else None,
        resume,
        continue_,
        show_reasoning,
        constrain.value if constrain is not None else None,
        context_size,
        sandbox=sandbox.value if sandbox is not None else None,
        allow_net=allow_net,
        allow_git_writes=allow_git_writes,
    )
    raise typer.Exit(code)


@app.command()
def selftest(model: ModelOpt = "smollm2-135m") -> None:
    """Load a model and run one real multi-token prompt through it."""
    from agent.selftest import selftest as check

    typer.echo(check(model))


def _table(rows: list[dict[str, str]], columns: list[str]) -> None:
    """A rich table on a terminal; tab-separated lines (with a header) in a pipe."""
    if not sys.stdout.isatty():
        for row in [dict(zip(columns, columns, strict=True)), *rows]:
            sys.stdout.write("\t".join(row.get(c, "") for c in columns) + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*columns, box=None, pad_edge=False)
    for row in rows:
        table.add_row(*(row.get(c, "") for c in columns))
    Console(soft_wrap=True).print(table)


@app.command()
def models(
    paths: Annotated[list[str] | None, typer.Argument(help="GGUF files to inspect too.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Bundled models, or each given GGUF's resolved profile: template, tool format,
    reasoning markers, wire remap and every adaptation bosun makes, with its reason."""
    from agent.listing import models_rows

    rows = models_rows(paths or [])
    if json_out:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    if paths:
        for row in rows:
            width = max(map(len, row))
            for key, value in row.items():
                typer.echo(f"{key:<{width}}  {value}")
            typer.echo("")
        return
    cols = ["model", "size", "template", "tool_format", "reasoning", "wire_remap", "path"]
    _table(rows, cols)


@app.command()
def render(
    model: ModelOpt = "smollm2-135m",
    session: Annotated[str | None, typer.Option(help="Render this session's history.")] = None,
    messages: Annotated[
        Path | None, typer.Option(help="Render a JSON list of messages (history format).")
    ] = None,
) -> None:
    """Print the exact prompt a model would be sent (wire form where it applies)."""
    from agent.listing import render_command

    sys.stdout.write(render_command(model, session, messages))


sessions_app = typer.Typer(help="Past sessions (append-only JSONL files).", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")


@sessions_app.command("list")
def sessions_list() -> None:
    """List saved sessions, oldest first."""
    from agent.listing import sessions_rows

    _table(sessions_rows(), ["id", "model", "workspace", "prompt"])


@sessions_app.command("show")
def sessions_show(
    session_id: Annotated[str, typer.Argument(help="Session id (or prefix).")],
) -> None:
    """Print a session's structured history as JSON lines."""
    from agent.history import message_to_dict
    from agent.listing import session_history

    for message in session_history(session_id):
        typer.echo(json.dumps(message_to_dict(message), ensure_ascii=False))


cache_app = typer.Typer(
    help="Saved prompt-prefix states: a new session loads its head instead of evaluating it.",
    no_args_is_help=True,
)
app.add_typer(cache_app, name="cache")


@cache_app.command("info")
def cache_info(
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Saved states, most recently used first: model, tokens, size, age; total vs cap."""
    from agent.cache_command import info, text_rows

    rows, total = info()
    if json_out:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    if rows:
        _table(text_rows(rows), ["model", "tokens", "size", "saved", "used", "file"])
    typer.echo(total)


@cache_app.command("clear")
def cache_clear() -> None:
    """Delete every saved state (they are rebuilt as sessions run)."""
    from agent.cache_command import clear_all

    typer.echo(clear_all())


contracts_app = typer.Typer(
    help="Falsification contracts: every promise names the tests that would break it.",
    no_args_is_help=True,
)
app.add_typer(contracts_app, name="contracts")

ContractsPath = Annotated[
    Path | None,
    typer.Argument(help="A contracts folder or one .yaml file (default: bosun's contracts/)."),
]
ContractsJson = Annotated[bool, typer.Option("--json", help="One JSON document, for CI.")]


@contracts_app.command("validate")
def contracts_validate(path: ContractsPath = None, json_out: ContractsJson = False) -> None:
    """Check contracts without running them: schema, ids, test nodes, mutation targets."""
    from agent.contracts.cli import validate_command

    raise typer.Exit(validate_command(path, json_out))


@contracts_app.command("check")
def contracts_check(
    path: ContractsPath = None,
    mutate: Annotated[
        bool, typer.Option("--mutate", help="Also require each falsifier to fail under its mutant.")
    ] = False,
    json_out: ContractsJson = False,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Mutant runs at once (default: up to 4)."),
    ] = None,
) -> None:
    """Run every falsifier; with --mutate, prove each one can fail."""
    from agent.contracts.cli import check_command

    raise typer.Exit(check_command(path, mutate, json_out, jobs))


@contracts_app.command("new")
def contracts_new(
    name: Annotated[str, typer.Argument(help="Contract id, e.g. tool-budget-v1.")],
) -> None:
    """Scaffold contracts/NAME.yaml with a skeleton to fill in."""
    from agent.contracts.cli import new_command

    raise typer.Exit(new_command(name))
