"""The choices `run` and `chat` share, and the option values that need checking beyond
what typer's types do. Kept out of main.py so the commands stay a page each.
"""

from __future__ import annotations

from enum import StrEnum

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
