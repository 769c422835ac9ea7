"""The `bosun` command. Thin: parse options, build objects, hand over.

`run`, `chat` and `selftest` live here, their shared choices in agent/cli/options.py;
the read-only commands in agent/cli/info.py (`map` in agent/cli/repomap.py), `cache` and
`contracts` in agent/cli/admin.py, the error policy in agent/cli/common.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent import __version__
from agent.cli import acp as cli_acp
from agent.cli import admin as cli_admin
from agent.cli import checkpoints as cli_checkpoints
from agent.cli import info as cli_info
from agent.cli import repomap as cli_repomap
from agent.cli import tasks as cli_tasks
from agent.cli.common import (
    EXIT_USAGE,
    BosunApp,
    ModelOpt,
    WorkspaceOpt,
    fail,
)
from agent.cli.options import (
    Api,
    Output,
    Shared,
    parse_ablations,
    seconds_or_off,
    shared_options,
)
from agent.cli.tasks import (
    Executor,
    ExecutorOpt,
    RayAddressOpt,
    RedoOpt,
    ResultsOpt,
    ShardOpt,
    batch_flags,
)

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


@app.command()
@shared_options
def run(
    prompt: Annotated[str | None, typer.Argument(help="The task; '-' reads it from stdin.")] = None,
    workspace: WorkspaceOpt = None,
    output: Annotated[Output, typer.Option(help="text for people, jsonl for scripts.")] = (
        Output.text
    ),
    max_turns: Annotated[int, typer.Option(min=1, help="Most model calls in this run.")] = 30,
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
    request_timeout: Annotated[
        str,
        typer.Option(
            "--request-timeout",
            metavar="SECONDS|off",
            help="openai: models only: how long the server may send nothing (a long"
            " prompt's prefill on a CPU can take minutes); off: no limit. Default 600.",
        ),
    ] = "600",
    strict: Annotated[
        bool,
        typer.Option(
            help="With --tasks: a bad line refuses the whole file (exit 2) instead of"
            " failing on its own while the other lines run."
        ),
    ] = False,
    shard: ShardOpt = None,
    results: ResultsOpt = None,
    redo: RedoOpt = False,
    executor: ExecutorOpt = Executor.local,
    ray_address: RayAddressOpt = None,
    ablate: Annotated[
        str,
        typer.Option(
            hidden=True,
            help="Evaluation only: turn off 'salvage' and/or 'retention' (comma-separated).",
        ),
    ] = "",
    *,
    shared: Shared,
) -> None:
    """Run one task headless and exit: 0 done, 1 error, 2 usage, 3 budget/stuck, 4 nothing
    allowed (refused/declined), 130 ^C. Text piped in joins the prompt.

    With --tasks: every task, concurrently; exit 1 when any task did not finish "done"
    (a bad line of the file counts as a failed task, tagged "line N", unless --strict).
    """
    ablations = parse_ablations(ablate)
    if tasks is not None and prompt is not None:
        fail("give a PROMPT or --tasks FILE, not both", EXIT_USAGE)
    batch_flags(tasks, shard, results, redo, executor, ray_address)
    from agent.run.config import settings_for

    settings = settings_for(workspace, shared.settings).but(
        api=api.value if api is not None else None,
        request_timeout=seconds_or_off("--request-timeout", request_timeout),
        allow_workspace_mcp=shared.allow_workspace_mcp,
        allow_workspace_hooks=shared.allow_workspace_hooks,
        max_turns=max_turns,
        trace=trace,
        ablate=ablations,
        output=output.value,
        jobs=jobs,
        strict=strict,
        shard=shard,
        results=results,
        redo=redo,
        executor=executor.value,
        ray_address=ray_address,
    )
    if tasks is not None:
        from agent.run.batch import run_tasks

        raise typer.Exit(run_tasks(settings, tasks))
    from agent.run.headless import run_once

    if prompt is None:
        fail("give a PROMPT ('-' reads it from stdin) or --tasks FILE", EXIT_USAGE)
    from agent.cli.piped import piped_text, prompt_from_stdin, with_piped
    from agent.run.custom_commands import expand_prompt

    piped = None if prompt == "-" else piped_text()
    prompt = prompt_from_stdin() if prompt == "-" else prompt
    # `/review src` names a custom command: its expansion is the prompt (piped text after)
    prompt = with_piped(expand_prompt(prompt, settings.workspace), piped)
    if not prompt.strip():
        fail("the prompt is empty", EXIT_USAGE)
    raise typer.Exit(run_once(settings, prompt, attached=bool(piped and piped.strip())))


@app.command()
@shared_options
def chat(
    workspace: WorkspaceOpt = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Continue session ID (or a prefix of it); with no ID, pick one of this"
            " folder's recent sessions.",
        ),
    ] = None,
    continue_: Annotated[
        bool,
        typer.Option("--continue", "-c", help="Continue the latest session in this workspace."),
    ] = False,
    show_reasoning: Annotated[
        bool, typer.Option("--show-reasoning", help="Show the model's reasoning as it streams.")
    ] = False,
    *,
    shared: Shared,
) -> None:
    """Talk to the agent in a terminal: streamed answers, tool calls, diffs, approvals."""
    from agent.ui.app import chat_command

    code = chat_command(
        workspace,
        shared.settings,
        resume,
        continue_,
        show_reasoning,
        allow_workspace_mcp=shared.allow_workspace_mcp,
        allow_workspace_hooks=shared.allow_workspace_hooks,
    )
    raise typer.Exit(code)


@app.command()
def selftest(model: ModelOpt = "smollm2-135m") -> None:
    """Load a model and run one real multi-token prompt through it."""
    from agent.cli.selftest import selftest as check

    typer.echo(check(model))


app.command()(cli_info.models)
app.command()(cli_info.render)
app.command(name="map")(cli_repomap.map_command)
app.add_typer(cli_info.sessions_app, name="sessions")
app.add_typer(cli_admin.cache_app, name="cache")
app.add_typer(cli_admin.contracts_app, name="contracts")
app.add_typer(cli_admin.mcp_app, name="mcp")
app.add_typer(cli_checkpoints.checkpoints_app, name="checkpoints")
app.add_typer(cli_tasks.tasks_app, name="tasks")
app.command("config")(cli_admin.config_command)
app.command("acp")(cli_acp.acp)
