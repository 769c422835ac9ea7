"""The choices `run` and `chat` share, and the option values that need checking beyond
what typer's types do. Kept out of main.py so the commands stay a page each.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import typer

from agent.cli.common import EXIT_USAGE, fail


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


class Speculate(StrEnum):
    auto = "auto"
    on = "on"
    off = "off"


class Sandbox(StrEnum):
    auto = "auto"
    on = "on"
    off = "off"


SANDBOX_HELP = "bash in bubblewrap: auto (where it works), on (or exit 2), off."
NET_HELP = "Give the sandbox the network."
GIT_HELP = "Let sandboxed commands write the workspace's .git/ (hooks, config)."
SPECULATE_HELP = (
    "In-process models: draft tokens from the prompt and verify them in one batch"
    " (faster where replies copy); auto: where the model runs on a GPU. Default: config,"
    " else auto."
)


ABLATIONS = ("salvage", "retention")


def seconds_or_off(flag: str, value: str) -> float | None:
    """`SECONDS` (a positive number) or `off` (None: no limit)."""
    if value.strip().lower() == "off":
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        fail(f"{flag}: give a number of seconds or off, not {value!r}", EXIT_USAGE)
    return seconds


def parse_ablations(value: str) -> frozenset[str]:
    """`--ablate salvage,retention` -> the parts of bosun to turn off (bench/eval)."""
    names = frozenset(part.strip() for part in value.split(",") if part.strip())
    unknown = sorted(names - set(ABLATIONS))
    if unknown:
        fail(
            f"--ablate: unknown {', '.join(unknown)} (choose from {', '.join(ABLATIONS)})",
            EXIT_USAGE,
        )
    return names


# --- the options run and chat share, declared once -----------------------------------


@dataclass(frozen=True)
class Shared:
    """The shared options as a command gets them: `settings`, the config keys the user
    gave (for `settings_for`: None where not given), and the two trust flags."""

    settings: dict[str, Any]
    allow_workspace_mcp: bool
    allow_workspace_hooks: bool


def _option(name: str, annotation: Any, default: Any = None) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def _shared_parameters() -> list[inspect.Parameter]:
    from agent.cli.common import (
        WORKSPACE_HOOKS_HELP,
        WORKSPACE_MCP_HELP,
        AutoLintOpt,
        AutoTestOpt,
        ConfigModelOpt,
        LintCmdOpt,
        TestCmdOpt,
        ToolsOpt,
        YesOpt,
    )

    def choice(kind: type[StrEnum], help: str) -> Any:
        first = next(iter(kind)).value
        return Annotated[kind | None, typer.Option(help=f"{help} Default: config, else {first}.")]

    return [
        _option("model", ConfigModelOpt),
        _option("approve", choice(Approve, "Which tools may run without asking.")),
        _option("constrain", choice(Constrain, "Grammar-constrained tool calls.")),
        _option(
            "context_size",
            Annotated[
                int | None,
                typer.Option(
                    "--context-size",
                    min=256,
                    help="Context window in tokens; long runs compact to stay inside it.",
                ),
            ],
        ),
        _option("speculate", Annotated[Speculate | None, typer.Option(help=SPECULATE_HELP)]),
        _option("sandbox", choice(Sandbox, SANDBOX_HELP)),
        _option("allow_net", Annotated[bool | None, typer.Option("--allow-net", help=NET_HELP)]),
        _option(
            "allow_git_writes",
            Annotated[bool | None, typer.Option("--allow-git-writes", help=GIT_HELP)],
        ),
        _option(
            "allow_workspace_mcp",
            Annotated[bool, typer.Option("--allow-workspace-mcp", help=WORKSPACE_MCP_HELP)],
            False,
        ),
        _option(
            "allow_workspace_hooks",
            Annotated[bool, typer.Option("--allow-workspace-hooks", help=WORKSPACE_HOOKS_HELP)],
            False,
        ),
        _option("tools", ToolsOpt),
        _option("yes", YesOpt, False),
        _option("lint_cmd", LintCmdOpt),
        _option("test_cmd", TestCmdOpt),
        _option("auto_lint", AutoLintOpt),
        _option("auto_test", AutoTestOpt),
    ]


def _shared(given: dict[str, Any]) -> Shared:
    """The shared options' values as settings: enums as their values, --yes as
    --approve auto, tool changes and lint commands parsed (a bad one exits 2)."""
    from agent.cli.common import tool_changes
    from agent.tools.checks import lint_flags

    def value(choice: StrEnum | None) -> str | None:
        return choice.value if choice is not None else None

    return Shared(
        settings={
            "model": given["model"],
            "approve": "auto" if given["yes"] else value(given["approve"]),
            "constrain": value(given["constrain"]),
            "speculate": value(given["speculate"]),
            "context_size": given["context_size"],
            "sandbox_mode": value(given["sandbox"]),
            "allow_net": given["allow_net"],
            "allow_git_writes": given["allow_git_writes"],
            "tools": tool_changes(given["tools"]),
            "lint_cmd": lint_flags(given["lint_cmd"] or ()),
            "test_cmd": given["test_cmd"],
            "auto_lint": given["auto_lint"],
            "auto_test": given["auto_test"],
        },
        allow_workspace_mcp=given["allow_workspace_mcp"],
        allow_workspace_hooks=given["allow_workspace_hooks"],
    )


def shared_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command`'s own options and the shared ones, which it gets as `shared: Shared`:
    typer reads the combined signature, so the shared options are declared once."""
    parameters = _shared_parameters()
    names = [p.name for p in parameters]
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.name != "shared"]

    @functools.wraps(command)
    def wrapper(**given: Any) -> None:
        picked = {name: given.pop(name) for name in names}
        command(**given, shared=_shared(picked))

    hints = {k: v for k, v in command.__annotations__.items() if k != "shared"}
    wrapper.__annotations__ = {**hints, **{p.name: p.annotation for p in parameters}}
    wrapper.__signature__ = signature.replace(parameters=[*own, *parameters])  # type: ignore[attr-defined]
    return wrapper
