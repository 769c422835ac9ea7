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
    WORKSPACE_HOOKS_HELP,
    WORKSPACE_MCP_HELP,
    AutoLintOpt,
    AutoTestOpt,
    BosunApp,
    ConfigModelOpt,
    LintCmdOpt,
    ModelOpt,
    TestCmdOpt,
    ToolsOpt,
    WorkspaceOpt,
    YesOpt,
    check_settings,
    config_hooks,
    config_map_tokens,
    config_speculate,
    config_tools,
    fail,
    mcp_servers,
    tool_changes,
)
from agent.cli.options import (
    GIT_HELP,
    NET_HELP,
    SANDBOX_HELP,
    SPECULATE_HELP,
    Api,
    Approve,
    Constrain,
    Output,
    Sandbox,
    Speculate,
    parse_ablations,
    seconds_or_off,
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
    request_timeout: Annotated[
        str,
        typer.Option(
            "--request-timeout",
            metavar="SECONDS|off",
            help="openai: models only: how long the server may send nothing (a long"
            " prompt's prefill on a CPU can take minutes); off: no limit. Default 600.",
        ),
    ] = "600",
    context_size: Annotated[
        int | None,
        typer.Option(
            "--context-size",
            min=256,
            help="Context window in tokens; long runs compact to stay inside it.",
        ),
    ] = None,
    speculate: Annotated[Speculate | None, typer.Option(help=SPECULATE_HELP)] = None,
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
    sandbox: Annotated[Sandbox, typer.Option(help=SANDBOX_HELP)] = Sandbox.auto,
    allow_net: Annotated[bool, typer.Option("--allow-net", help=NET_HELP)] = False,
    allow_git_writes: Annotated[bool, typer.Option("--allow-git-writes", help=GIT_HELP)] = False,
    allow_workspace_mcp: Annotated[
        bool, typer.Option("--allow-workspace-mcp", help=WORKSPACE_MCP_HELP)
    ] = False,
    allow_workspace_hooks: Annotated[
        bool, typer.Option("--allow-workspace-hooks", help=WORKSPACE_HOOKS_HELP)
    ] = False,
    tools: ToolsOpt = None,
    yes: YesOpt = False,
    lint_cmd: LintCmdOpt = None,
    test_cmd: TestCmdOpt = None,
    auto_lint: AutoLintOpt = None,
    auto_test: AutoTestOpt = None,
) -> None:
    """Run one task headless and exit: 0 done, 1 error, 2 usage, 3 budget/stuck, 4 nothing
    allowed (refused/declined), 130 ^C. Text piped in joins the prompt.

    With --tasks: every task, concurrently; exit 1 when any task did not finish "done"
    (a bad line of the file counts as a failed task, tagged "line N", unless --strict).
    """
    ablations = parse_ablations(ablate)
    changes = tool_changes(tools)  # a bad name fails before anything loads
    if changes is None:
        changes = config_tools(workspace)
    if yes:
        approve = Approve.auto
    if tasks is not None and prompt is not None:
        fail("give a PROMPT or --tasks FILE, not both", EXIT_USAGE)
    batch_flags(tasks, shard, results, redo, executor, ray_address)
    from agent.run.settings import Settings
    from agent.tools.sandbox import resolve_sandbox

    checks = check_settings(workspace, lint_cmd, test_cmd, auto_lint, auto_test)
    policy = resolve_sandbox(sandbox.value, allow_net=allow_net, allow_git_writes=allow_git_writes)
    settings = Settings(
        model=model,
        workspace=workspace if workspace is not None else Path.cwd(),
        approve=approve.value,
        constrain=constrain.value,
        api=api.value if api is not None else None,
        request_timeout=seconds_or_off("--request-timeout", request_timeout),
        speculate=config_speculate(workspace, speculate.value if speculate else None),
        context_size=context_size,
        sandbox=policy,
        allow_net=allow_net,
        allow_git_writes=allow_git_writes,
        mcp_servers=mcp_servers(workspace),
        allow_workspace_mcp=allow_workspace_mcp,
        hooks=config_hooks(workspace),
        allow_workspace_hooks=allow_workspace_hooks,
        tools=changes,
        repo_map_tokens=config_map_tokens(workspace),
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
        **checks,
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
def chat(
    model: ConfigModelOpt = None,
    workspace: WorkspaceOpt = None,
    approve: Annotated[
        Approve | None, typer.Option(help="Which tools may run without asking.")
    ] = None,
    constrain: Annotated[
        Constrain | None, typer.Option(help="Grammar-constrained tool calls.")
    ] = None,
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
    context_size: Annotated[
        int | None, typer.Option("--context-size", min=256, help="Context window in tokens.")
    ] = None,
    speculate: Annotated[Speculate | None, typer.Option(help=SPECULATE_HELP)] = None,
    sandbox: Annotated[
        Sandbox | None, typer.Option(help=SANDBOX_HELP + " Default: config, else auto.")
    ] = None,
    allow_net: Annotated[bool | None, typer.Option("--allow-net", help=NET_HELP)] = None,
    allow_git_writes: Annotated[
        bool | None, typer.Option("--allow-git-writes", help=GIT_HELP)
    ] = None,
    allow_workspace_mcp: Annotated[
        bool, typer.Option("--allow-workspace-mcp", help=WORKSPACE_MCP_HELP)
    ] = False,
    allow_workspace_hooks: Annotated[
        bool, typer.Option("--allow-workspace-hooks", help=WORKSPACE_HOOKS_HELP)
    ] = False,
    tools: ToolsOpt = None,
    yes: YesOpt = False,
    lint_cmd: LintCmdOpt = None,
    test_cmd: TestCmdOpt = None,
    auto_lint: AutoLintOpt = None,
    auto_test: AutoTestOpt = None,
) -> None:
    """Talk to the agent in a terminal: streamed answers, tool calls, diffs, approvals."""
    from agent.ui.app import chat_command

    changes = tool_changes(tools)
    if yes:
        approve = Approve.auto
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
        allow_workspace_mcp=allow_workspace_mcp,
        tools=changes,
        checks=(lint_cmd, test_cmd, auto_lint, auto_test),
        allow_workspace_hooks=allow_workspace_hooks,
        speculate=speculate.value if speculate is not None else None,
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
