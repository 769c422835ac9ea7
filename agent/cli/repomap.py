"""`bosun map`: the repository map a model would be shown, or every definition as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import EXIT_USAGE, fail

DEFAULT_TOKENS = 2048


def map_command(
    path: Annotated[
        Path | None, typer.Argument(help="The folder to map (default: the current one).")
    ] = None,
    tokens: Annotated[
        int, typer.Option("--tokens", min=1, max=1_000_000, help="The map's size in tokens.")
    ] = DEFAULT_TOKENS,
    json_out: Annotated[
        bool, typer.Option("--json", help="Every definition (path, name, kind, line), ranked.")
    ] = False,
) -> None:
    """Print the repository map: the workspace's definitions (tree-sitter), ranked by
    how the code uses them and fitted to --tokens (about 3 characters a token); what
    was skipped is said at the end. The same map goes into a model's prompt
    (`repo_map_tokens` in config.toml)."""
    from agent.errors import ToolError
    from agent.tools.repomap import repo_map

    root = path if path is not None else Path.cwd()
    if not root.is_dir():
        fail(f"{root}: no such folder", EXIT_USAGE)
    try:
        found = repo_map(root)
    except ToolError as exc:
        fail(str(exc), 1)
    if json_out:
        typer.echo(json.dumps(found.to_json(), ensure_ascii=False, indent=1))
        return
    from agent.untrusted import visible

    text = found.text(tokens)  # the workspace's own lines: no escape sequence reaches the terminal
    typer.echo("\n".join(visible(line) for line in text.splitlines()) or "(no definitions found)")
    if not text and found.scan.skipped_note():
        typer.echo(f"({found.scan.skipped_note()})")
