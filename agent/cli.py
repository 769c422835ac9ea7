"""The `bosun` command. Thin: parse options, build objects, hand over.

Every failure a user can cause ends in one line on stderr and a documented exit code
(2 for usage errors); no traceback reaches the terminal unless BOSUN_DEBUG is set.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

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


class Constrain(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


class BosunApp(typer.Typer):
    """Typer, with bosun's error policy applied around every command."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from drivers.base import DriverError, UsageError

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


def _fail(message: str, code: int) -> None:
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


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="The task; '-' reads it from stdin.")],
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
) -> None:
    """Run one task headless and exit: 0 done, 1 error, 2 usage, 3 budget/stuck, 130 ^C."""
    from agent.headless import RunOptions, run_once

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
        )
    )
    raise typer.Exit(code)


@app.command()
def selftest(model: ModelOpt = "smollm2-135m") -> None:
    """Load a model and run one real multi-token prompt through it."""
    from agent.selftest import selftest as check

    typer.echo(check(model))
