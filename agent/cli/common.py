"""What every `bosun` command shares: the error policy, the common options, tables.

Every failure a user can cause ends in one line on stderr and a documented exit code
(2 for usage errors); no traceback reaches the terminal unless BOSUN_DEBUG is set.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from agent.session import PICK
from agent.untrusted import visible

try:  # typer >= 0.20 vendors click privately; older releases use click itself
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from click import exceptions as click_exc  # type: ignore[no-redef]

EXIT_USAGE = 2


class BosunApp(typer.Typer):
    """Typer, with bosun's error policy applied around every command."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from agent.errors import HarnessError, UsageError

        if not args and "args" not in kwargs:
            kwargs["args"] = optional_values(sys.argv[1:])
        try:
            code = super().__call__(*args, standalone_mode=False, **kwargs)
        except click_exc.NoArgsIsHelpError as exc:
            sys.stderr.write((exc.ctx.get_help() if exc.ctx else "") + "\n")
            code = EXIT_USAGE
        except click_exc.UsageError as exc:
            cmd = exc.ctx.command_path if exc.ctx else "bosun"
            fail(f"{usage_message(exc)} (see '{cmd} --help')", EXIT_USAGE)
        except click_exc.ClickException as exc:
            fail(exc.format_message(), 1)
        except UsageError as exc:
            fail(str(exc), EXIT_USAGE)
        except HarnessError as exc:
            fail(str(exc), 1)
        except (KeyboardInterrupt, typer.Abort):
            fail("interrupted", 130)
        except Exception as exc:
            if os.environ.get("BOSUN_DEBUG"):
                raise
            fail(f"internal error: {type(exc).__name__}: {exc} (BOSUN_DEBUG=1 shows more)", 1)
        sys.exit(code if isinstance(code, int) else 0)


def usage_message(exc: click_exc.UsageError) -> str:
    """click's message, in bosun's words: an unknown option suggests only options that
    are plainly a typo of it (`--aprove`, not `--ablate` for `--frobnicate`), and a bad
    value says what it is and what it may be, without the library's own phrasing."""
    import difflib

    if isinstance(exc, click_exc.NoSuchOption):
        name = exc.option_name
        close = [
            p
            for p in exc.possibilities or ()
            if difflib.SequenceMatcher(None, name.lstrip("-"), p.lstrip("-")).ratio() >= 0.7
        ]
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        return f"no such option: {name}{hint}"
    message = exc.format_message()
    return message.replace("Value error, ", "")


_OPTIONAL_VALUE = {"--resume": PICK}


def optional_values(argv: list[str]) -> list[str]:
    """Click has no option whose value may be left out; `chat --resume` alone (last, or
    before another option) means "let me pick", so the placeholder is put in for it."""
    out = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--":
            return out + argv[i + 1 :]
        following = argv[i + 1] if i + 1 < len(argv) else None
        if arg in _OPTIONAL_VALUE and (following is None or following.startswith("-")):
            out.append(_OPTIONAL_VALUE[arg])
    return out


def fail(message: str, code: int) -> NoReturn:
    """The one line a command ends with; it quotes what went wrong, often in others'
    words (a server's error body, a workspace file's name): escapes shown, not run."""
    sys.stderr.write(f"bosun: error: {visible(message)}\n")
    sys.exit(code)


ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="GGUF path, bundled name (smollm2-135m), openai:URL#MODEL or scripted:FILE.jsonl.",
    ),
]
# chat and acp: a model the config may name when the flag does not
ConfigModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="GGUF path, bundled name, openai:URL#MODEL or scripted:FILE.jsonl"
        " (default: config.toml, else smollm2-135m).",
    ),
]
WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="Folder the agent works in (default: current)."),
]


YesOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Same as --approve auto: every tool runs unasked.")
]


TOOLS_HELP = (
    "Change the model's tool set: +NAME adds, -NAME removes, comma-separated"
    " (--tools +apply_patch,-edit_file); applied after the model's own defaults."
)
ToolsOpt = Annotated[str | None, typer.Option("--tools", metavar="+NAME,-NAME", help=TOOLS_HELP)]


def tool_changes(spec: str | None) -> tuple[str, ...] | None:
    """--tools as changes, None when not given; unknown names are a usage error."""
    from agent.tools import parse_tool_changes

    return None if spec is None else parse_tool_changes(spec)


WORKSPACE_MCP_HELP = "Start MCP servers the workspace names (.mcp.json, .bosun.toml) unapproved."


WORKSPACE_HOOKS_HELP = (
    "Run hooks the workspace names (.bosun.toml, .claude/settings.json) unapproved."
)


def table(rows: list[dict[str, str]], columns: list[str]) -> None:
    """A rich table on a terminal; tab-separated lines (with a header) in a pipe."""
    if not sys.stdout.isatty():
        for row in [dict(zip(columns, columns, strict=True)), *rows]:
            sys.stdout.write("\t".join(row.get(c, "") for c in columns) + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    from agent.ui.render import cell

    table = Table(*columns, box=None, pad_edge=False)
    for row in rows:
        table.add_row(*(cell(row.get(c, "")) for c in columns))
    Console(soft_wrap=True).print(table)


LintCmdOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--lint-cmd",
        metavar="[EXT:]CMD",
        help="Linter for edited files ({files} where they go, else at the end); 'py: ruff"
        " check' for one extension or language, repeatable. Default: config, else Python's"
        " own syntax check for .py.",
    ),
]
TestCmdOpt = Annotated[
    str | None,
    typer.Option(
        "--test-cmd",
        metavar="CMD",
        help="The test command: /test in chat; after edits with --auto-test.",
    ),
]
AutoLintOpt = Annotated[
    bool | None,
    typer.Option(
        "--auto-lint/--no-auto-lint",
        help="Lint the files of every edit. Default: config, else off.",
    ),
]
AutoTestOpt = Annotated[
    bool | None,
    typer.Option(
        "--auto-test/--no-auto-test",
        help="Run the test command after a request that edited files; failures go back to"
        " the model. Default: config, else off.",
    ),
]
