"""The housekeeping sub-apps: `bosun cache`, `bosun contracts` and `bosun mcp`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import (
    EXIT_USAGE,
    WORKSPACE_MCP_HELP,
    ConfigModelOpt,
    WorkspaceOpt,
    fail,
    table,
)

cache_app = typer.Typer(
    help="Saved prompt-prefix states: a new session loads its head instead of evaluating it.",
    no_args_is_help=True,
)


@cache_app.command("info")
def cache_info(
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Saved states, most recently used first: model, tokens, size, age; total vs cap."""
    from agent.cli.cache import info, text_rows

    rows, total = info()
    if json_out:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    if rows:
        table(text_rows(rows), ["model", "tokens", "size", "saved", "used", "file"])
    typer.echo(total)


@cache_app.command("clear")
def cache_clear() -> None:
    """Delete every saved state (they are rebuilt as sessions run)."""
    from agent.cli.cache import clear_all

    typer.echo(clear_all())


contracts_app = typer.Typer(
    help="Falsification contracts: every promise names the tests that would break it.",
    no_args_is_help=True,
)

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


mcp_app = typer.Typer(
    help="MCP servers: their tools join bosun's ([mcp_servers.NAME] in config, .mcp.json).",
    no_args_is_help=True,
)


@mcp_app.command("list")
def mcp_list(
    workspace: WorkspaceOpt = None,
    allow_workspace_mcp: Annotated[
        bool, typer.Option("--allow-workspace-mcp", help=WORKSPACE_MCP_HELP)
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Start the configured servers, list each one's status and tools, stop them."""
    from agent.mcp.listing import list_servers

    root = (workspace if workspace is not None else Path.cwd()).resolve()
    from agent.run.config import settings_for

    rows = list_servers(settings_for(root).mcp_servers, root, allow_workspace_mcp)
    if json_out:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    if not rows:
        typer.echo("no MCP servers configured ([mcp_servers.NAME] in config.toml, or .mcp.json)")
        return
    table(
        [
            {k: str(v) if not isinstance(v, list) else ", ".join(v) for k, v in r.items()}
            for r in rows
        ],
        ["server", "from", "status", "tools", "note"],
    )


def config_command(
    workspace: WorkspaceOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """The config files in force and each setting with the file that set it."""
    from agent.cli.config_report import report, text

    data = report(workspace if workspace is not None else Path.cwd())
    if json_out:
        typer.echo(json.dumps(data, ensure_ascii=False, default=list))
    else:
        typer.echo(text(data), nl=False)


@mcp_app.command("serve")
def mcp_serve(
    model: ConfigModelOpt = None,
    approve: Annotated[
        str | None,
        typer.Option(
            help="The loosest approve mode a caller may ask for (read-only, ask,"
            " auto-edit, auto), and the one a call gets when it names none. Default:"
            " config, else auto-edit.",
        ),
    ] = None,
    max_turns: Annotated[int, typer.Option(min=1, help="Most model calls in one run.")] = 30,
    sandbox: Annotated[
        str | None,
        typer.Option(help="bash in bubblewrap: auto (where it works), on, off. Default: config."),
    ] = None,
) -> None:
    """bosun as an MCP server on stdio: tools run_task and continue_session."""
    from agent.run.config import settings_for
    from agent.tools.permissions import APPROVE_MODES
    from agent.tools.sandbox import SANDBOX_MODES

    if approve is not None and approve not in APPROVE_MODES:
        fail(f"--approve must be one of {', '.join(APPROVE_MODES)}", EXIT_USAGE)
    if sandbox is not None and sandbox not in SANDBOX_MODES:
        fail(f"--sandbox must be one of {', '.join(SANDBOX_MODES)}", EXIT_USAGE)
    flags = {"model": model, "approve": approve, "sandbox_mode": sandbox}
    # nobody can answer a question here: a call gets auto-edit unless a file or the
    # flag says otherwise
    settings = settings_for(Path.cwd(), flags, face={"approve": "auto-edit"}).but(
        max_turns=max_turns
    )
    from agent.run.mcp_serve import serve

    raise typer.Exit(serve(settings))
